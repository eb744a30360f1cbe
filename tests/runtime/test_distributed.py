"""One runtime over several processes: two `Runtime`s on one real Redis stand for two processes
(each has its own consumer name and reply stream)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from pydantic import BaseModel
from redis.asyncio import Redis

from baton import Actor, Runtime, handler
from baton.agents.journal import MemoryJournalStore
from baton.agents.messages import Prompt
from baton.agents.redis_journal import RedisJournalStore
from baton.errors import ConfigError, RuntimeFailure
from baton.models.scripted import Script, ScriptedModel
from baton.pipeline.config import parse_config
from baton.pipeline.host import journal_for
from baton.pipeline.roles import InitActor, agent_setup
from baton.runtime.errors import HandlerFailedError, UnknownActorError
from baton.runtime.ref import ActorRef
from baton.runtime.token_log import TokenLog
from baton.server import create_control_app
from tests.agents.test_agent import config as agent_config


class Hello(BaseModel):
    name: str


class Greeting(BaseModel):
    text: str


class Greeter(Actor):
    def __init__(self, seen: list[str]) -> None:
        self.seen = seen

    @handler
    async def greet(self, msg: Hello) -> Greeting:
        if msg.name == "boom":
            raise ValueError("no greeting for boom")
        self.seen.append(msg.name)
        return Greeting(text=f"hi {msg.name}")


def shared(url: str, **redis: Any) -> Any:
    return parse_config({"runtime": {"mailbox": url, "redis": redis}})


@asynccontextmanager
async def process(url: str, **redis: Any) -> AsyncIterator[Runtime]:
    async with Runtime.open(config=shared(url, **redis), shutdown_timeout=2) as runtime:
        yield runtime


async def test_an_actor_run_by_another_process_is_told_and_asked(redis_url: str) -> None:
    seen: list[str] = []
    async with process(redis_url) as here, process(redis_url) as there:
        assert here.distributed is not None
        assert there.distributed is not None
        assert here.distributed.consumer != there.distributed.consumer
        await there.spawn("greeter", Greeter, seen)
        await here.tell("greeter", Hello(name="told"))
        # A model reply crosses processes as its JSON.
        assert {"text": "hi asked"} == await here.ask("greeter", Hello(name="asked"), timeout=10)
        assert ["told", "asked"] == seen
        with pytest.raises(HandlerFailedError, match="no greeting for boom"):
            await here.ask("greeter", Hello(name="boom"), timeout=10)
        with pytest.raises(UnknownActorError, match="greeter"):  # the known names are listed
            await here.tell("nobody", Hello(name="x"))


async def test_processes_running_one_actor_share_its_messages_once_each(redis_url: str) -> None:
    seen_here: list[str] = []
    seen_there: list[str] = []
    async with process(redis_url) as here, process(redis_url) as there:
        await here.spawn("greeter", Greeter, seen_here)
        await there.spawn("greeter", Greeter, seen_there)
        names = [f"n{i}" for i in range(40)]
        replies = [await here.ask("greeter", Hello(name=name), timeout=10) for name in names]
    texts = [r.text if isinstance(r, Greeting) else r["text"] for r in replies]
    assert [f"hi {name}" for name in names] == texts
    assert sorted(names) == sorted(seen_here + seen_there)  # each handled once, none lost


async def test_an_unreachable_redis_is_reported_with_its_url() -> None:
    url = "redis://127.0.0.1:1/0"
    with pytest.raises(RuntimeFailure, match=re.escape(f"cannot reach Redis at {url}")):
        async with process(url):
            pass


@pytest.mark.parametrize(
    "value",
    ["postgres://x", "redis://", "redis://host:notaport/0", "redis://host:6379/zero", "sqlit"],
)
def test_a_bad_mailbox_value_names_the_key(value: str) -> None:
    with pytest.raises(ConfigError, match=r"runtime\.mailbox"):
        parse_config({"runtime": {"mailbox": value}})


def test_redis_urls_and_settings_are_accepted() -> None:
    settings = parse_config(
        {"runtime": {"mailbox": "rediss://:pw@cache.internal:6380/2", "redis": {"claim_idle": 5}}}
    ).runtime
    assert ("rediss://:pw@cache.internal:6380/2", 5.0) == (
        settings.mailbox,
        settings.redis.claim_idle,
    )
    with pytest.raises(ConfigError, match=r"runtime\.redis\.lease_ttl"):
        parse_config({"runtime": {"redis": {"lease_ttl": 0}}})


async def test_a_distributed_pipeline_journals_in_redis(redis_url: str, tmp_path: Path) -> None:
    async with Runtime.open(tmp_path, config=shared(redis_url)) as runtime:
        assert isinstance(journal_for(runtime), RedisJournalStore)
    async with Runtime.open(tmp_path) as runtime:
        assert not journal_for(runtime).shared


def agent(journal: Any, model: ScriptedModel, token_log: TokenLog, workspace: Path) -> InitActor:
    setup = agent_setup(
        "init",
        agent_config(),
        workspace=workspace,
        model=model,
        journal=journal,
        token_log=token_log,
    )
    actor = InitActor(setup)
    actor.actor_ref = ActorRef("init", router=None)  # type: ignore[arg-type] - tells nothing
    return actor


def user_texts(payload: Any) -> list[str]:
    texts = []
    for message in payload["messages"]:
        content = message["content"]
        if message["role"] == "user" and isinstance(content, str):
            texts.append(content)
        elif message["role"] == "user":
            texts += [b.get("text", "") for b in content if b.get("type") == "text"]
    return texts


async def test_a_worker_picks_up_a_conversation_another_went_on_with(
    redis_url: str, tmp_path: Path
) -> None:
    """Worker A answers round 1, worker B round 2, A round 3: A's cached conversation is stale
    and must be brought up to date from the shared journal, or round 2 is lost to it."""
    model = ScriptedModel(Script.model_validate({"actors": {"init": ["one", "two", "three"]}}))
    client = Redis.from_url(redis_url)
    try:
        async with TokenLog.open(None) as token_log:
            a = agent(RedisJournalStore(client, owner="a"), model, token_log, tmp_path)
            b = agent(RedisJournalStore(client, owner="b"), model, token_log, tmp_path)
            await a.on_start()
            await b.on_start()
            assert "one" == await a.prompt(Prompt(text="first question"))
            assert "two" == await b.prompt(Prompt(text="second question"))
            assert "three" == await a.prompt(Prompt(text="third question"))
            rounds = [
                json.loads(raw)
                for raw in await client.lrange("baton:journal:{init}:main", 0, -1)
                if json.loads(raw)["type"] == "round"
            ]
    finally:
        await client.aclose()
    third = model.calls[-1].payload
    assert ["first question", "second question", "third question"] == [
        t for t in user_texts(third) if t.endswith("question")
    ]
    assert 3 == len(rounds)


async def test_a_sole_owner_journal_is_not_rechecked(tmp_path: Path) -> None:
    """The local stores skip the length check: nobody else appends to them."""
    model = ScriptedModel(Script.model_validate({"actors": {"init": ["one", "two"]}}))

    class Counting(MemoryJournalStore):
        lengths = 0

        async def length(self, actor: str, conversation: str) -> int:
            Counting.lengths += 1
            return await super().length(actor, conversation)

    async with TokenLog.open(None) as token_log:
        a = agent(Counting(), model, token_log, tmp_path)
        await a.on_start()
        await a.prompt(Prompt(text="first"))
        await a.prompt(Prompt(text="second"))
    assert 0 == Counting.lengths


async def test_the_control_api_reaches_an_actor_another_process_runs(redis_url: str) -> None:
    """`baton ask greeter Hello ...` against `baton run --actors scheduler` while a worker
    runs the greeter: the message is built from the class the registry names."""
    seen: list[str] = []
    async with process(redis_url) as here, process(redis_url) as there:
        await there.spawn("greeter", Greeter, seen)
        transport = httpx2.ASGITransport(app=create_control_app(here, on_stop=lambda: None))
        async with httpx2.AsyncClient(transport=transport, base_url="http://baton") as http:
            asked = await http.post(
                "/actors/greeter/ask", json={"type": "Hello", "payload": {"name": "c"}}
            )
            wrong = await http.post("/actors/greeter/tell", json={"type": "Bye", "payload": {}})
            nobody = await http.post(
                "/actors/nobody/tell", json={"type": "Hello", "payload": {"name": "c"}}
            )
    assert (200, {"text": "hi c"}) == (asked.status_code, asked.json()["reply"])
    assert 422 == wrong.status_code
    assert "it accepts: Hello" in wrong.json()["error"]["message"]
    assert (404, "UnknownActorError") == (nobody.status_code, nobody.json()["error"]["type"])
    assert ["c"] == seen
