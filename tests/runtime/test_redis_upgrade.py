"""A single Redis server's keys from before hash tags are renamed when a process opens it: the
messages waiting and the journals written before an upgrade carry on (README.md, "Scaling
out")."""

from __future__ import annotations

import json

import anyio
from redis.asyncio import Redis
from structlog.testing import capture_logs

from baton.mailboxes.codec import EnvelopeCodec
from baton.mailboxes.envelope import Envelope
from baton.runtime._redis_upgrade import rename_untagged_keys
from tests.runtime.test_distributed import Greeter, Hello, process


async def register(client: Redis, name: str) -> None:
    entry = {"type": "Greeter", "class": "tests.runtime.test_distributed:Greeter", "capacity": 8}
    await client.hset("baton:actors", name, json.dumps(entry))


async def test_a_message_waiting_before_the_upgrade_is_delivered_after_it(
    redis_url: str, redis_client: Redis
) -> None:
    """A message in an actor's old stream (`baton:mailbox:greeter`), with its consumer group,
    reaches the actor once a process of this version opens the server."""
    await register(redis_client, "greeter")
    body = EnvelopeCodec({"Hello": Hello}).encode(Envelope("greeter", Hello(name="waited")))
    await redis_client.xgroup_create("baton:mailbox:greeter", "greeter", id="0", mkstream=True)
    await redis_client.xadd("baton:mailbox:greeter", {"e": body})
    await redis_client.xadd("baton:dead:greeter", {"e": "{}", "r": "an old dead letter"})
    seen: list[str] = []
    async with process(redis_url) as runtime:
        await runtime.spawn("greeter", Greeter, seen)
        with anyio.fail_after(5):
            while not seen:
                await anyio.lowlevel.checkpoint()
    assert ["waited"] == seen
    assert 0 == await redis_client.exists("baton:mailbox:greeter", "baton:dead:greeter")
    assert 1 == await redis_client.xlen("baton:dead:{greeter}")


async def test_journals_and_pending_entries_keep_under_the_new_names(
    redis_client: Redis,
) -> None:
    """Journals, their set, and a stream with an entry pending for a consumer are renamed
    with their contents; a key already under its new name is left and reported; a second
    run renames nothing."""
    client = redis_client
    await register(client, "init")
    await register(client, "execute")
    await client.rpush("baton:journal:init:c1", '{"n":1}', '{"n":2}')
    await client.rpush("baton:journal:init:c2", '{"n":3}')
    await client.sadd("baton:journals:init", "c1", "c2")
    await client.xgroup_create("baton:mailbox:execute", "execute", id="0", mkstream=True)
    entry = await client.xadd("baton:mailbox:execute", {"e": "{}"})
    await client.xreadgroup("execute", "worker", {"baton:mailbox:execute": ">"})
    await client.xadd("baton:dead:execute", {"e": "{}", "r": "old"})
    await client.xadd("baton:dead:{execute}", {"e": "{}", "r": "new"})
    with capture_logs() as logs:
        assert 4 == await rename_untagged_keys(client, "baton")
    assert [b'{"n":1}', b'{"n":2}'] == await client.lrange("baton:journal:{init}:c1", 0, -1)
    assert [b'{"n":3}'] == await client.lrange("baton:journal:{init}:c2", 0, -1)
    assert {b"c1", b"c2"} == await client.smembers("baton:journals:{init}")
    pending = await client.xpending_range("baton:mailbox:{execute}", "execute", "-", "+", 10)
    assert [(entry, b"worker")] == [(p["message_id"], p["consumer"]) for p in pending]
    not_renamed = [e for e in logs if e["event"] == "redis.key_not_renamed"]
    assert [("baton:dead:execute", "baton:dead:{execute}")] == [
        (e["key"], e["new_key"]) for e in not_renamed
    ]
    assert 0 == await rename_untagged_keys(client, "baton")
