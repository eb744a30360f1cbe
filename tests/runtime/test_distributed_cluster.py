"""One runtime over several processes on a three-primary Redis Cluster: the `redis://` URL of
one node is all a process needs (README.md, "Scaling out"); actors spread over the nodes,
and the journals of a conversation shared by two workers."""

from __future__ import annotations

from pathlib import Path

from redis.asyncio import RedisCluster

from baton.agents.messages import Prompt
from baton.agents.redis_journal import RedisJournalStore
from baton.models.scripted import Script, ScriptedModel
from baton.pipeline.host import journal_for
from baton.runtime.runtime import Runtime
from baton.runtime.token_log import TokenLog
from tests.runtime.test_distributed import (
    Greeter,
    Greeting,
    Hello,
    agent,
    process,
    shared,
    user_texts,
)

NAMES = [f"greeter-{n}" for n in range(6)]


def text(reply: object) -> str:
    """A reply's text, whether it crossed processes (a dict) or not (a Greeting)."""
    return reply.text if isinstance(reply, Greeting) else str(reply["text"])  # type: ignore[index]


async def test_actors_on_every_node_are_told_and_asked_across_processes(
    redis_cluster_url: str,
) -> None:
    """Actors spawned in one process, their mailboxes on all three primaries, answer the tells
    and asks of another process; two processes running one actor handle each message once."""
    seen: dict[str, list[str]] = {name: [] for name in NAMES}
    shared_here: list[str] = []
    shared_there: list[str] = []
    async with process(redis_cluster_url) as here, process(redis_cluster_url) as there:
        assert here.distributed is not None
        client = here.distributed.client
        assert isinstance(client, RedisCluster)
        nodes = {client.get_node_from_key(f"baton:mailbox:{{{name}}}").name for name in NAMES}
        assert 3 == len(nodes)
        for name in NAMES:
            await there.spawn(name, Greeter, seen[name])
        for name in NAMES:
            await here.tell(name, Hello(name=f"told {name}"))
        replies = [await here.ask(name, Hello(name=name), timeout=10) for name in NAMES]
        await here.spawn("shared", Greeter, shared_here)
        await there.spawn("shared", Greeter, shared_there)
        asked = [f"n{i}" for i in range(20)]
        answers = [await here.ask("shared", Hello(name=n), timeout=10) for n in asked]
    assert [f"hi {name}" for name in NAMES] == [text(reply) for reply in replies]
    assert {name: [f"told {name}", name] for name in NAMES} == seen
    assert [f"hi {n}" for n in asked] == [text(answer) for answer in answers]
    assert sorted(asked) == sorted(shared_here + shared_there)


async def test_two_workers_go_on_with_one_conversation_on_a_cluster(
    redis_cluster_url: str, tmp_path: Path
) -> None:
    """A distributed pipeline on a cluster journals in Redis; workers A, B, A answer three
    rounds of one conversation, each reading what the other journaled."""
    async with Runtime.open(tmp_path, config=shared(redis_cluster_url)) as runtime:
        store = journal_for(runtime)
        assert isinstance(store, RedisJournalStore)
    model = ScriptedModel(Script.model_validate({"actors": {"init": ["one", "two", "three"]}}))
    client = RedisCluster.from_url(redis_cluster_url)
    try:
        async with TokenLog.open(None) as token_log:
            journal = RedisJournalStore(client, owner="a")
            a = agent(journal, model, token_log, tmp_path)
            b = agent(RedisJournalStore(client, owner="b"), model, token_log, tmp_path)
            await a.on_start()
            await b.on_start()
            assert "one" == await a.prompt(Prompt(text="first question"))
            assert "two" == await b.prompt(Prompt(text="second question"))
            assert "three" == await a.prompt(Prompt(text="third question"))
            assert ["main"] == await journal.conversations("init")
    finally:
        await client.aclose()
    # Round 3 was sent with round 2, which only B answered: A read it from the journal.
    third = model.calls[-1].payload
    assert ["first question", "second question", "third question"] == [
        t for t in user_texts(third) if t.endswith("question")
    ]
