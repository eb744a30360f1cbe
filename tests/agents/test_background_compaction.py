"""Background compaction: the summary is asked for past `precompact_at` of the threshold while
the agent goes on, used at the threshold, journaled, and resumed after a crash at any point
without being paid for twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from baton import Runtime
from baton.agents.agent_config import AgentConfig
from baton.agents.agent_setup import AgentSetup
from baton.agents.compaction import hard_limit
from baton.agents.journal import FileJournalStore, encode_line
from baton.agents.messages import Prompt
from baton.context.payload import Payload
from baton.context.strategy import ContextBudget
from baton.context.validation import validate_request
from baton.models.protocol import ModelLimits, ModelResponse, current_call
from baton.models.scripted import Script, ScriptedModel
from baton.pipeline.roles import InitActor, agent_setup
from baton.testing import capture_token_log

PARTS = [f"part_{n}.txt" for n in range(10)]
LINES = 60
TURNS: list[Any] = [
    *({"tool_use": {"name": "Read", "input": {"path": path}}} for path in PARTS),
    "All parts read.",
    "Nothing else.",
]


def write_parts(workspace: Path) -> None:
    for n, path in enumerate(PARTS):
        text = "\n".join(f"part {n} line {i}: {'leave rule ' * 8}" for i in range(LINES))
        (workspace / path).write_text(text)


def config(**overrides: Any) -> AgentConfig:
    settings: dict[str, Any] = {
        "model": "claude-opus-4-5",
        "context_window": 60_000,
        "compact_threshold": 12_000,
        "keep_recent_steps": 3,
        "precompact_at": 0.6,
    }
    return AgentConfig.model_validate({**settings, **overrides})


def setup(workspace: Path, model: Any, token_log: Any, **overrides: Any) -> AgentSetup:
    return agent_setup(
        "init",
        config(**overrides),
        workspace=workspace,
        model=model,
        journal=FileJournalStore(workspace),
        token_log=token_log,
    )


class SlowSummaries:
    """A scripted model whose summaries take until the agent has made another turn call:
    the order of calls shows whether the agent waited."""

    def __init__(self) -> None:
        self.inner = ScriptedModel(Script.model_validate({"actors": {"init": TURNS}}))
        self.name = self.inner.name
        self.order: list[str] = []
        self.asked = anyio.Event()
        self.release = anyio.Event()

    async def limits(self) -> ModelLimits:
        return await self.inner.limits()

    async def create(self, payload: Payload) -> ModelResponse:
        call = current_call()
        assert call is not None
        if call.purpose == "compaction":
            self.order.append(f"summary {call.turn}")
            self.asked.set()
            with anyio.move_on_after(10):  # an agent waiting for it fails the test, not hangs
                await self.release.wait()
            self.order.append("summary answered")
        else:
            self.order.append(f"turn {call.turn}")
            if self.asked.is_set():
                self.release.set()
        return await self.inner.create(payload)


async def test_the_agent_works_on_while_its_summary_is_written(tmp_path: Path) -> None:
    """Past `precompact_at` the summary is asked for and the agent makes its next call
    before the answer; the compaction at the threshold uses it, keeps whole the steps the
    request did not show, and says the agent waited less than the summary took."""
    write_parts(tmp_path)
    model = SlowSummaries()
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("init", InitActor, setup(tmp_path, model, rt.token_log))
        with capture_token_log() as lines:
            assert "All parts read." == await rt.ask("init", Prompt(text="read the parts"))
    asked = next(i for i, call in enumerate(model.order) if call.startswith("summary "))
    answered = model.order.index("summary answered")
    assert model.order[asked + 1].startswith("turn "), model.order
    assert asked + 1 < answered
    records = await FileJournalStore(tmp_path).read("init", "main")
    precompaction, summary, compaction = (
        next(r for r in records if r["type"] == kind)
        for kind in ("precompaction", "summary", "compaction")
    )
    through = precompaction["through_seq"]
    assert through == summary["through_seq"]
    assert f"summary {through + 1}" == model.order[asked]
    steps = [r["step"]["seq"] for r in records if r["type"] == "step"]
    assert compaction["first_kept_seq"] <= through + 1 < steps[-1]
    compacted = next(line for line in lines if line["event"] == "context.compacted")
    assert compacted["waited_ms"] < compacted["latency_ms"]
    for call in model.inner.calls:
        assert [] == validate_request(call.payload, require_model=False, strict_alternation=True)


async def test_precompact_at_one_asks_at_the_threshold_while_the_agent_waits(
    tmp_path: Path,
) -> None:
    """`precompact_at = 1` turns it off: the summary is asked for at the threshold and no
    turn call is made until it is answered."""
    write_parts(tmp_path)
    model = SlowSummaries()
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("init", InitActor, setup(tmp_path, model, rt.token_log, precompact_at=1))
        async with anyio.create_task_group() as group:
            group.start_soon(rt.ask, "init", Prompt(text="read the parts"))
            await model.asked.wait()
            await anyio.wait_all_tasks_blocked()
            waiting = list(model.order)
            model.release.set()
    assert waiting[-1].startswith("summary "), waiting
    records = await FileJournalStore(tmp_path).read("init", "main")
    assert [] == [r for r in records if r["type"] == "precompaction"]


def shape(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What each compaction kept and carried (not its timings)."""
    return [
        (r["first_kept_seq"], r["kept_steps"], r["summary"], r["tokens_after"], r["mode"])
        for r in records
        if r["type"] == "compaction"
    ]


async def uninterrupted(workspace: Path) -> tuple[list[dict[str, Any]], ScriptedModel]:
    model = ScriptedModel(Script.model_validate({"actors": {"init": TURNS}}))
    async with Runtime.open(workspace) as rt:
        await rt.spawn("init", InitActor, setup(workspace, model, rt.token_log))
        assert "All parts read." == await rt.ask("init", Prompt(text="read the parts"))
        assert "Nothing else." == await rt.ask("init", Prompt(text="anything else?"))
    return await FileJournalStore(workspace).read("init", "main"), model


async def test_a_crash_at_any_point_of_a_background_compaction_resumes_to_the_same_end(
    tmp_path: Path,
) -> None:
    """The journal cut after each record from the background request to its compaction, as a
    crash there leaves it: the resumed agent asks again, about the history the first request
    showed, only when no summary was journaled, and ends with the uninterrupted compactions."""
    clean = tmp_path / "clean"
    clean.mkdir()
    write_parts(clean)
    records, clean_model = await uninterrupted(clean)
    kinds = [r["type"] for r in records]
    start, end = kinds.index("precompaction"), kinds.index("compaction")
    summary_at = kinds.index("summary")
    assert start < summary_at < end
    clean_summary = next(c for c in clean_model.calls if c.context.purpose == "compaction")
    compactions = shape(records)
    for cut in range(start + 1, end + 1):
        workspace = tmp_path / f"cut_{cut}"
        workspace.mkdir()
        write_parts(workspace)
        journal = workspace / ".baton" / "journal" / "init" / "main.jsonl"
        journal.parent.mkdir(parents=True)
        journal.write_bytes(b"".join(encode_line(r) for r in records[:cut]))
        model = ScriptedModel(Script.model_validate({"actors": {"init": TURNS}}))
        async with Runtime.open(workspace) as rt:
            await rt.spawn("init", InitActor, setup(workspace, model, rt.token_log))
            # The interrupted round finishes first, then this one.
            assert "Nothing else." == await rt.ask("init", Prompt(text="anything else?"))
        resumed = await FileJournalStore(workspace).read("init", "main")
        summaries = [c for c in model.calls if c.context.purpose == "compaction"]
        context = f"cut after record {cut} ({kinds[cut - 1]})"
        first = [c for c in summaries if c.context.turn == clean_summary.context.turn]
        if cut > summary_at:
            assert [] == first, context
        else:
            assert [clean_summary.payload] == [c.payload for c in first], context
        assert compactions == shape(resumed), context
        paid = {r["turn"] for r in records[:cut] if r["type"] == "response"}
        asked = {c.context.turn for c in model.calls if c.context.purpose == "turn"}
        assert set() == paid & asked, context


class LateSummaries(SlowSummaries):
    """A model with latency (not the offline one): each summary is answered only once the
    agent has made `after` more turn calls."""

    def __init__(self, after: int) -> None:
        super().__init__()
        self.after = after
        self.turns_since_asked = 0

    async def create(self, payload: Payload) -> ModelResponse:
        call = current_call()
        assert call is not None
        if call.purpose == "compaction":
            self.turns_since_asked = 0
            self.release = anyio.Event()
            self.order.append(f"summary {call.turn}")
            with anyio.move_on_after(10):
                await self.release.wait()
            self.order.append("summary answered")
            return await self.inner.create(payload)
        self.order.append(f"turn {call.turn}")
        self.turns_since_asked += 1
        if self.turns_since_asked >= self.after:
            self.release.set()
        return await self.inner.create(payload)


async def test_past_the_threshold_the_agent_goes_on_until_its_summary_is_answered(
    tmp_path: Path,
) -> None:
    """A summary still being written at the threshold does not stop the agent: it makes
    calls over the threshold, below the hard limit, and compacts once the answer is there,
    without waiting for it."""
    write_parts(tmp_path)
    model = LateSummaries(after=2)
    async with Runtime.open(tmp_path) as rt:
        # Asked for just before the threshold, answered two calls later: past it.
        agent = setup(tmp_path, model, rt.token_log, precompact_at=0.95)
        await rt.spawn("init", InitActor, agent)
        with capture_token_log() as lines:
            assert "All parts read." == await rt.ask("init", Prompt(text="read the parts"))
    records = await FileJournalStore(tmp_path).read("init", "main")
    kinds = [r["type"] for r in records]
    asked, first = kinds.index("precompaction"), kinds.index("compaction")
    compaction = records[first]
    budget = ContextBudget.model_validate(config(precompact_at=0.95), from_attributes=True)
    # Over the threshold (each step's context: its request plus its results) and below
    # the hard limit, steps went on after the request until its answer was there.
    assert budget.compact_threshold < compaction["tokens_before"] < hard_limit(budget)
    assert 2 <= kinds[asked:first].count("step")
    between = model.order[model.order.index(f"summary {records[asked]['through_seq'] + 1}") :]
    assert between[1].startswith("turn "), model.order
    compacted = next(line for line in lines if line["event"] == "context.compacted")
    assert compacted["waited_ms"] < compacted["latency_ms"]


def test_the_hard_limit_is_halfway_from_the_threshold_to_the_room_left_in_the_window() -> None:
    """Threshold 100K, window 400K, 20K for the answer: the agent goes on up to 240K."""
    budget = ContextBudget(
        context_window=400_000, compact_threshold=100_000, max_output_tokens=20_000
    )
    assert 240_000 == hard_limit(budget)


def _read(path: str) -> dict[str, Any]:
    return {"tool_use": {"name": "Read", "input": {"path": path}}}


SMALL = [f"small_{n}.txt" for n in range(12)]
# First round: past precompact_at, so a summary is asked for, then stripped back under it
# (no compaction); second round: many small reads, then a big one crosses the threshold.
TWO_ROUNDS: list[Any] = [
    *(_read(path) for path in SMALL[:4]),
    "Read the first four.",
    *(_read(path) for path in SMALL[4:]),
    _read("big.txt"),
    "Read the rest.",
    "Nothing else.",
]


async def two_rounds(workspace: Path, records: list[dict[str, Any]] | None = None) -> Any:
    """Both rounds on `workspace` (resuming `records` as the journal, when given)."""
    for n, path in enumerate(SMALL):
        (workspace / path).write_text(
            "\n".join(f"small {n} line {i}: {'leave rule ' * 8}" for i in range(30))
        )
    (workspace / "big.txt").write_text(
        "\n".join(f"big line {i}: {'leave rule ' * 8}" for i in range(250))
    )
    if records is not None:
        journal = workspace / ".baton" / "journal" / "init" / "main.jsonl"
        journal.parent.mkdir(parents=True)
        journal.write_bytes(b"".join(encode_line(r) for r in records))
    model = ScriptedModel(Script.model_validate({"actors": {"init": TWO_ROUNDS}}))
    async with Runtime.open(workspace) as rt:
        agent = setup(workspace, model, rt.token_log, precompact_at=0.5)
        await rt.spawn("init", InitActor, agent)
        if records is None:
            assert "Read the first four." == await rt.ask("init", Prompt(text="read 0-3"))
            assert "Read the rest." == await rt.ask("init", Prompt(text="read the rest"))
        # Resumed, the interrupted round finishes first, then this one.
        assert "Nothing else." == await rt.ask("init", Prompt(text="anything else?"))
    return await FileJournalStore(workspace).read("init", "main"), model


async def test_a_summary_answered_for_an_earlier_round_is_not_taken_after_a_crash(
    tmp_path: Path,
) -> None:
    """A summary asked for in the background and answered, but left unused when its round
    ended, does not answer a later compaction it no longer fits: live the summary is asked
    for again; resumed from a crash before that second answer, the agent asks again too,
    with the same request, and compacts as the uninterrupted run did."""
    clean = tmp_path / "clean"
    clean.mkdir()
    records, clean_model = await two_rounds(clean)
    kinds = [r["type"] for r in records]
    summaries = [i for i, kind in enumerate(kinds) if kind == "summary"]
    second_round = [i for i, kind in enumerate(kinds) if kind == "round"][1]
    # Two answers for compaction 0: the first round's (unused), then the second round's.
    assert 2 == len(summaries)
    assert [0, 0] == [records[i]["compaction"] for i in summaries]
    assert summaries[0] < second_round < summaries[1] < kinds.index("compaction")
    fresh = [c for c in clean_model.calls if c.context.purpose == "compaction"][1]
    resumed_at = tmp_path / "resumed"
    resumed_at.mkdir()
    resumed, model = await two_rounds(resumed_at, records[: summaries[1]])
    asked = [c for c in model.calls if c.context.purpose == "compaction"]
    assert [fresh.payload] == [c.payload for c in asked]
    assert shape(records) == shape(resumed)


class HeldSummaries(SlowSummaries):
    """Summaries answered only when the test releases them; turns answered at once."""

    async def create(self, payload: Payload) -> ModelResponse:
        call = current_call()
        assert call is not None
        if call.purpose == "compaction":
            self.order.append(f"summary {call.turn}")
            self.asked.set()
            with anyio.move_on_after(10):  # a test that waits for it wrongly fails, not hangs
                await self.release.wait()
            self.order.append("summary answered")
        else:
            self.order.append(f"turn {call.turn}")
        return await self.inner.create(payload)


async def test_a_round_that_ends_past_the_threshold_uses_the_summary_it_asked_for(
    tmp_path: Path,
) -> None:
    """The agent went on past the threshold while its summary was written and made its last
    call before the answer came: the round applies the summary before it ends, so it is not
    paid for and left unused (docs/context.md, "Background compaction")."""
    write_parts(tmp_path)
    model = HeldSummaries()
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("init", InitActor, setup(tmp_path, model, rt.token_log, stride=20))
        with capture_token_log() as lines:
            async with anyio.create_task_group() as group:
                group.start_soon(rt.ask, "init", Prompt(text="read the parts"))
                await model.asked.wait()
                # The round has made its final call and waits for nothing but the summary.
                while f"turn {len(PARTS)}" not in model.order:
                    await anyio.wait_all_tasks_blocked()
                await anyio.wait_all_tasks_blocked()
                model.release.set()
    asked = [c for c in lines if c["event"] == "model.call" and c["purpose"] == "compaction"]
    compacted = [line for line in lines if line["event"] == "context.compacted"]
    assert model.order.index("summary answered") > model.order.index(f"turn {len(PARTS)}")
    assert 1 == len(asked)
    assert 1 == len(compacted)
