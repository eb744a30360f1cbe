"""RedisJournalStore against a real redis-server, and against a three-primary Redis Cluster:
records shared by workers, leases that exclude, renew, expire and release, and appends fenced
by the lease."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from anyio.lowlevel import checkpoint
from redis.asyncio import Redis, RedisCluster
from structlog.testing import capture_logs

from baton.agents._agent_state import ConversationBook, load_state
from baton.agents.errors import JournalCorruptError, LeaseLostError
from baton.agents.redis_journal import RedisJournalStore
from baton.context.strategy import ContextBudget
from baton.errors import UsageError
from tests.agents.test_agent import config

JOURNAL = "baton:journal:{init}:c1"
LEASE = "baton:lease:{init}:c1"
Stores = Callable[..., RedisJournalStore]


@pytest.fixture(params=["redis", "redis-cluster"])
def client(request: pytest.FixtureRequest) -> Redis:
    """A client of an empty single server, then of an empty cluster (its keys share a slot)."""
    name = "redis_cluster_client" if request.param == "redis-cluster" else "redis_client"
    found: Redis = request.getfixturevalue(name)
    return found


@pytest.fixture
def stores(client: Redis) -> Stores:
    """Make a store, one per simulated worker process, named by its owner."""

    def make(owner: str, **options: Any) -> RedisJournalStore:
        return RedisJournalStore(client, owner=owner, **options)

    return make


async def until(predicate: Callable[[], Any], timeout: float = 5.0) -> None:
    """Yield to the other tasks until `predicate` holds; fail after `timeout` seconds."""
    with anyio.fail_after(timeout):
        while not await predicate():
            await checkpoint()


async def lease_value(client: Redis) -> str | None:
    value = await client.get(LEASE)
    return None if value is None else value.decode()


def events(logs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [entry for entry in logs if entry["event"] == name]


async def test_records_are_shared_by_workers_in_append_order(client: Redis, stores: Stores) -> None:
    """What one worker appended, the next reads back, in order, and appends after."""
    first, second = stores("host-a:1"), stores("host-b:2")
    records = [{"kind": "round", "text": "生成请假申请场景"}, {"kind": "step", "turn": 1}]
    async with first.hold("init", "c1"):
        for record in records:
            await first.append("init", "c1", record)
    async with first.hold("init", "c2"):
        await first.append("init", "c2", {"n": 0})
    async with second.hold("init", "c1"):
        assert 2 == await second.length("init", "c1")
        assert records == await second.read("init", "c1")
        await second.append("init", "c1", {"kind": "step", "turn": 2})
    assert [*records, {"kind": "step", "turn": 2}] == await first.read("init", "c1")
    assert 3 == await first.length("init", "c1")
    assert ["c1", "c2"] == await second.conversations("init")
    assert [] == await second.conversations("execute")
    assert 0 == await second.length("execute", "c1")
    # Compact JSON with the text as is: a record is stored as the file store would write it.
    assert '{"kind":"round","text":"生成请假申请场景"}'.encode() == await client.lindex(JOURNAL, 0)


async def test_append_without_holding_is_refused(client: Redis, stores: Stores) -> None:
    """A store that does not hold the conversation writes nothing, even with the lease free."""
    store = stores("a")
    with pytest.raises(LeaseLostError, match="c1"):
        await store.append("init", "c1", {"n": 1})
    assert 0 == await client.exists(JOURNAL, "baton:journals:{init}")


async def test_a_second_worker_waits_until_the_first_releases(
    client: Redis, stores: Stores
) -> None:
    """The second hold gets in only after the first exits, and says it waits once."""
    first, second = stores("a"), stores("b")
    order: list[str] = []

    async def set_calls() -> int:
        # On a cluster, the SETs of the lease go to the node owning its key.
        where = {}
        if isinstance(client, RedisCluster):
            where = {"target_nodes": client.get_node_from_key(LEASE)}
        stats = await client.info("commandstats", **where)
        return int(stats.get("cmdstat_set", {}).get("calls", 0))

    async def hold_second() -> None:
        async with second.hold("init", "c1"):
            order.append("second acquired")
            await second.append("init", "c1", {"by": "second"})

    # The server's SET count is cumulative over the session: count from here.
    before = await set_calls()
    with capture_logs() as logs:
        async with anyio.create_task_group() as tasks, first.hold("init", "c1"):
            tasks.start_soon(hold_second)
            # The first's SET plus three refused tries of the second.
            await until(lambda: _at_least(set_calls, before + 4))
            await first.append("init", "c1", {"by": "first"})
            order.append("first releasing")
    assert ["first releasing", "second acquired"] == order
    assert [{"by": "first"}, {"by": "second"}] == await first.read("init", "c1")
    assert 1 == len(events(logs, "journal.lease_waiting"))
    assert None is await client.get(LEASE)


async def _at_least(count: Callable[[], Any], minimum: int) -> bool:
    return bool(await count() >= minimum)


async def test_a_worker_past_its_lease_cannot_append(
    stores: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker whose lease expired while it was paused (no renewal) gets LeaseLostError once
    another worker has taken the conversation over; only the new holder's records land."""
    paused, other = stores("paused", lease_ttl=0.2), stores("other")

    async def no_renewal(**_: Any) -> int:
        return 1  # the process was paused: its renewals never reached Redis

    monkeypatch.setattr(paused, "_renew", no_renewal)
    async with paused.hold("init", "c1"):
        await paused.append("init", "c1", {"n": 1})
        with anyio.fail_after(2):
            async with other.hold("init", "c1"):
                await other.append("init", "c1", {"n": 2})
                with pytest.raises(LeaseLostError):
                    await paused.append("init", "c1", {"n": 3})
    assert [{"n": 1}, {"n": 2}] == await other.read("init", "c1")


async def test_a_lease_taken_over_is_noticed_and_fences_appends(
    client: Redis, stores: Stores
) -> None:
    """When the lease key no longer holds our token (overwritten, or gone), the renewal logs
    `journal.lease_lost` and appends are refused, writing nothing."""
    store = stores("a", lease_ttl=0.3)
    with capture_logs() as logs:
        async with store.hold("init", "c1"):
            await store.append("init", "c1", {"n": 1})
            await client.set(LEASE, "b:feedface", px=5000)
            with pytest.raises(LeaseLostError):
                await store.append("init", "c1", {"n": 2})
            await until(lambda: _logged(logs, "journal.lease_lost"), timeout=1)
            await client.delete(LEASE)
            with pytest.raises(LeaseLostError):
                await store.append("init", "c1", {"n": 3})
    assert [{"n": 1}] == await store.read("init", "c1")
    lost = events(logs, "journal.lease_lost")[0]
    assert {"actor": "init", "conversation": "c1"}.items() <= lost.items()


async def _logged(logs: list[dict[str, Any]], name: str) -> bool:
    return bool(events(logs, name))


async def test_renewal_keeps_the_lease_past_its_ttl(client: Redis, stores: Stores) -> None:
    """Held for well over its TTL, the lease still carries the holder's token and a competing
    hold stays out until the holder exits."""
    holder, competitor = stores("holder", lease_ttl=0.3), stores("competitor", lease_ttl=0.3)
    async with holder.hold("init", "c1"):
        token = await lease_value(client)
        assert token is not None
        assert token.startswith("holder:")
        with anyio.move_on_after(0.8) as waited:
            async with competitor.hold("init", "c1"):
                pytest.fail("the competitor got in while the lease was held")
        assert waited.cancelled_caught
        assert token == await lease_value(client)
    assert None is await lease_value(client)


async def test_a_dead_holders_lease_is_taken_over_once_it_expires(
    client: Redis, stores: Stores
) -> None:
    """A lease left by a worker that died expires, and the waiting hold then gets it."""
    await client.set(LEASE, "dead:0123abcd", px=200)
    store = stores("a")
    with capture_logs() as logs, anyio.fail_after(2):
        async with store.hold("init", "c1"):
            token = await lease_value(client)
            assert token is not None
            assert token.startswith("a:")
            await store.append("init", "c1", {"n": 1})
    assert events(logs, "journal.lease_waiting")
    assert [{"n": 1}] == await store.read("init", "c1")


async def test_holds_nest_and_only_the_outermost_exit_releases(
    client: Redis, stores: Stores
) -> None:
    """Holding a conversation already held by the same store nests instead of deadlocking."""
    store = stores("a")
    with anyio.fail_after(2):
        async with store.hold("init", "c1"):
            token = await lease_value(client)
            async with store.hold("init", "c1"):
                assert token == await lease_value(client)
                await store.append("init", "c1", {"n": 1})
            assert token == await lease_value(client)
            await store.append("init", "c1", {"n": 2})
    assert None is await lease_value(client)
    assert 2 == await store.length("init", "c1")


async def test_a_hold_joined_by_another_task_lasts_until_both_exit(
    client: Redis, stores: Stores
) -> None:
    """Another task of the same store joins a hold; the lease outlives the first task's exit."""
    store = stores("a")
    second_in, second_may_leave = anyio.Event(), anyio.Event()
    order: list[str] = []

    async def second() -> None:
        async with store.hold("init", "c1"):
            second_in.set()
            await second_may_leave.wait()
            await store.append("init", "c1", {"by": "second"})
            order.append("second leaving")

    async def first() -> None:
        async with store.hold("init", "c1"):
            tasks.start_soon(second)
            await second_in.wait()
        order.append("first left")

    with anyio.fail_after(2):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(first)
            await second_in.wait()
            assert (await lease_value(client) or "").startswith("a:")
            second_may_leave.set()
    assert ["second leaving", "first left"] == order
    assert None is await lease_value(client)


async def test_the_lease_is_released_on_exception_and_cancellation(
    client: Redis, stores: Stores
) -> None:
    """A hold exited by an error or a cancellation releases its lease; the error is raised
    as itself, not wrapped in an exception group."""
    store = stores("a")

    async def fail_while_holding() -> None:
        async with store.hold("init", "c1"):
            assert await lease_value(client) is not None
            raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        await fail_while_holding()
    assert None is await lease_value(client)
    with anyio.move_on_after(0.05) as scope:
        async with store.hold("init", "c1"):
            await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert None is await lease_value(client)


async def test_a_cancelled_wait_leaves_the_other_lease_alone(client: Redis, stores: Stores) -> None:
    """Giving up on a held conversation neither takes nor frees the holder's lease."""
    await client.set(LEASE, "other:0123abcd", px=5000)
    with anyio.move_on_after(0.1) as scope:
        async with stores("a").hold("init", "c1"):
            pytest.fail("got a lease someone else holds")
    assert scope.cancelled_caught
    assert "other:0123abcd" == await lease_value(client)


async def test_a_damaged_element_is_reported_with_its_position(
    client: Redis, stores: Stores
) -> None:
    """A list element that is not a JSON object raises JournalCorruptError naming the key,
    the actor, the conversation, the element and how to set the key aside."""
    store = stores("a")
    await client.rpush(JOURNAL, '{"n":1}', "[1,2]", '{"n":3}')
    with pytest.raises(JournalCorruptError) as not_an_object:
        await store.read("init", "c1")
    await client.lset(JOURNAL, 1, "not json")
    with pytest.raises(JournalCorruptError) as not_json:
        await store.read("init", "c1")
    assert (
        f"journal redis key {JOURNAL} (actor 'init', conversation 'c1') is damaged at line 2: "
        f"the element is not a JSON object — rename the key aside (e.g. `redis-cli RENAME "
        f"{JOURNAL} {JOURNAL}.damaged`) so that conversation starts afresh, or restore it "
        "from a backup"
    ) == str(not_an_object.value)
    assert "is damaged at line 2: the element is not JSON — " in str(not_json.value)


async def test_a_record_out_of_order_names_the_key(client: Redis, stores: Stores) -> None:
    """A conversation whose step record does not follow (one was removed) fails to load with
    the Redis key, the actor, the conversation and the element that does not fit."""
    store = stores("a")
    round_ = {"type": "round", "round": 0, "text": "hi"}
    step = {"type": "step", "step": {"seq": 1, "content": [{"type": "text", "text": "x"}]}}
    await client.rpush(JOURNAL, json.dumps(round_), json.dumps(step))
    budget = ContextBudget.model_validate(config(), from_attributes=True)
    book = ConversationBook(
        journal=store,
        owner=lambda: "init",
        load=lambda c, records: load_state(c, records, lambda _: None, budget),  # type: ignore[arg-type,return-value]
    )
    with pytest.raises(JournalCorruptError) as failed:
        await book.get("c1")
    assert str(failed.value).startswith(
        f"journal redis key {JOURNAL} (actor 'init', conversation 'c1') is damaged at line 2: "
        "step 1 out of order: expected 0 — rename the key aside"
    )


async def test_a_record_that_is_not_json_writes_nothing(stores: Stores) -> None:
    """A record json cannot encode is a TypeError, and the journal is left as it was."""
    store = stores("a")
    async with store.hold("init", "c1"):
        with pytest.raises(TypeError):
            await store.append("init", "c1", {"when": object()})
    assert 0 == await store.length("init", "c1")


async def test_bad_settings_and_names_are_refused(stores: Stores) -> None:
    """A non-positive lease TTL and names that are unsafe for a key are refused."""
    with pytest.raises(ValueError, match="lease_ttl"):
        stores("a", lease_ttl=0)
    store = stores("a")
    with pytest.raises(UsageError, match="invalid conversation"):
        store.hold("init", "c1:../x y")
    with pytest.raises(UsageError, match="invalid actor"):
        await store.read("a b", "c1")
    assert store.shared


async def test_a_conversations_keys_share_its_actors_slot(
    redis_cluster_client: RedisCluster,
) -> None:
    """On a cluster, the lease, the journal and the conversation set of an actor's
    conversations hash to one slot, the slot of the actor's mailbox: the fenced append (one
    script over the three keys) runs there."""
    store = RedisJournalStore(redis_cluster_client, owner="a")
    for conversation in ("c1", "c2", "main"):
        async with store.hold("init", conversation):
            await store.append("init", conversation, {"n": 1})
            lease = store._key("lease", "init", conversation)
            assert 1 == await redis_cluster_client.exists(lease)
    keys = [
        lease,
        *(
            raw.decode()
            for raw in await redis_cluster_client.keys(target_nodes=RedisCluster.PRIMARIES)
        ),
    ]
    assert {redis_cluster_client.keyslot("baton:mailbox:{init}")} == {
        redis_cluster_client.keyslot(key) for key in keys
    }
    assert ["c1", "c2", "main"] == await store.conversations("init")
    assert [{"n": 1}] == await store.read("init", "main")
