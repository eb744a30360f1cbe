"""The compaction audit files, `baton status`'s compaction lines, and the guard that stops
compactions freeing too little (docs/context.md, "Compaction audit", "Ineffective
compactions")."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import anyio
import pytest

from baton import Runtime
from baton.agents._compaction_report import CompactionReports
from baton.agents.agent_config import AgentConfig
from baton.agents.compaction import CompactionHost, Compactor
from baton.agents.errors import CompactionIneffectiveError
from baton.agents.journal import FileJournalStore
from baton.agents.last_compaction import compaction_lines, last_compactions
from baton.agents.messages import Prompt
from baton.context.conversation import Conversation
from baton.context.records import Compaction
from baton.context.strategy import ContextBudget
from baton.errors import ConfigError
from baton.models.scripted import Script, ScriptedModel
from baton.pipeline.agent_context import AgentContext
from baton.pipeline.config import parse_config
from baton.pipeline.messages import Dispatch, WorkRefused
from baton.pipeline.roles import InitActor, agent_setup
from baton.runtime.actor import Actor, handler
from baton.server._render import render_status
from baton.server._status_models import StatusReport
from baton.testing import capture_token_log


class _Sink:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def emit(self, event: str, **fields: Any) -> None:
        self.lines.append({"event": event, **fields})


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_each_compaction_writes_a_private_audit_named_in_its_log_line(
    tmp_path: Path,
) -> None:
    """The agent's compaction leaves `.baton/compactions/init/main/1.json` (0600 in 0700
    directories) with the dropped steps' range and tools, the summary and the facts; the
    `context.compacted` line names it and `baton status` shows it."""
    big = "\n".join(f"line {n}: leave balance record {'x' * 80}" for n in range(200))
    (tmp_path / "big.txt").write_text(big)
    turns: list[Any] = [
        {"tool_use": {"name": "Read", "input": {"path": "big.txt"}}},
        {"tool_use": {"name": "Write", "input": {"path": "notes.md", "content": "# notes"}}},
        {"tool_use": {"name": "Read", "input": {"path": "big.txt"}}},
        "Round one done.",
    ]
    model = ScriptedModel(Script.model_validate({"actors": {"init": turns}}))
    config = AgentConfig(
        model="claude-opus-4-5",
        context_window=40_000,
        compact_threshold=12_000,
        keep_recent_steps=2,
    )
    async with Runtime.open(tmp_path) as rt:
        setup = agent_setup(
            "init",
            config,
            workspace=tmp_path,
            model=model,
            journal=FileJournalStore(tmp_path),
            token_log=rt.token_log,
            write_paths=("notes.md",),
        )
        await rt.spawn("init", InitActor, setup)
        with capture_token_log() as lines:
            assert "Round one done." == await rt.ask("init", Prompt(text="summarise big.txt"))
    compacted = [line for line in lines if line["event"] == "context.compacted"]
    assert ".baton/compactions/init/main/1.json" == compacted[0]["audit"]
    path = tmp_path / compacted[0]["audit"]
    assert (0o600, 0o700, 0o700) == (
        _mode(path),
        _mode(path.parent),
        _mode(tmp_path / ".baton" / "compactions"),
    )
    audit = json.loads(path.read_text())
    assert (1, "init", "main") == (audit["compaction"], audit["actor"], audit["conversation"])
    dropped = audit["dropped"]
    assert 0 == dropped["first_seq"]
    assert set(dropped["tools"]) <= {"Read", "Write"}
    assert sum(dropped["tools"].values()) == dropped["steps"]
    assert audit["summary"]
    assert "notes.md" in {fact["value"] for fact in audit["facts"]}
    assert ["init"] == list(last_compactions(tmp_path))
    [line] = compaction_lines(tmp_path)
    assert line.startswith("  init: last compaction #1 of main at ")
    assert line.endswith(".baton/compactions/init/main/1.json")
    report = StatusReport(
        pid=1,
        workspace=str(tmp_path),
        actors=[],
        scheduler=False,
        scenarios=[],
        pending_approvals=[],
        dead_letters=0,
        token_log=None,
        token_records=0,
    )
    assert line in render_status(report).splitlines()


BIG = "\n".join(f"line {n}: leave balance record {'x' * 80}" for n in range(200))
READS: list[Any] = [
    {"tool_use": {"name": "Read", "input": {"path": f"big{n}.txt"}}} for n in range(12)
]
WEAK = AgentConfig(
    model="claude-opus-4-5",
    context_window=40_000,
    compact_threshold=12_000,
    keep_recent_steps=8,
    max_output_tokens=1000,
    min_compaction_gain=0.9,
    load_budget_tokens=1_000_000,
)


def _weak_agent(workspace: Path, runtime: Runtime, model: Any) -> Any:
    return agent_setup(
        "init",
        WEAK,
        workspace=workspace,
        model=model,
        journal=FileJournalStore(workspace),
        token_log=runtime.token_log,
    )


async def test_an_agent_stops_compacting_and_fails_the_round_before_overflowing(
    tmp_path: Path,
) -> None:
    """Keeping 8 steps whole of ~7K tokens each, compactions free under 0.9 x 12K: after two
    the agent logs `context.compaction_ineffective`, compacts no more, and the round fails
    with the overflow message before the window (40K) is exceeded by a request: once, to
    the asker, with no restart and no retry (it would end the same way)."""
    for n in range(12):
        (tmp_path / f"big{n}.txt").write_text(BIG)
    model = ScriptedModel(Script.model_validate({"actors": {"init": [*READS, "done"]}}))
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("init", InitActor, _weak_agent(tmp_path, rt, model))
        with capture_token_log() as lines, pytest.raises(CompactionIneffectiveError) as failed:
            await rt.ask("init", Prompt(text="read them all"))
        alive = rt.is_alive("init")
    events = [line["event"] for line in lines]
    stopped = events.index("context.compaction_ineffective")
    assert 2 <= events[:stopped].count("context.compacted")
    assert "context.compacted" not in events[stopped:]
    assert ([], True) == ([e for e in events if e == "actor.restarted"], alive)
    ineffective = lines[stopped]
    assert all(freed < 10_800 for freed in ineffective["freed_tokens"])
    assert 10_800 == ineffective["min_gain_tokens"]
    assert "init: the context" in str(failed.value)
    assert "about to overflow its 40000-token window" in str(failed.value)
    sent = [line["context_tokens"] for line in lines if line["event"] == "model.call"]
    assert all(tokens < 40_000 for tokens in sent)


async def test_a_restarted_agent_reads_the_weak_compactions_back_from_its_journal(
    tmp_path: Path,
) -> None:
    """After the round failed, a new process on the same journal does not compact again
    (nor pay for another summary): its next request on the conversation fails the same
    way at once."""
    for n in range(12):
        (tmp_path / f"big{n}.txt").write_text(BIG)
    script = Script.model_validate({"actors": {"init": [*READS, "done"]}})
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("init", InitActor, _weak_agent(tmp_path, rt, ScriptedModel(script)))
        with pytest.raises(CompactionIneffectiveError) as first:
            await rt.ask("init", Prompt(text="read them all"))
    model = ScriptedModel(script)
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("init", InitActor, _weak_agent(tmp_path, rt, model))
        with pytest.raises(CompactionIneffectiveError) as again:
            await rt.ask("init", Prompt(text="go on"))
    assert str(first.value) == str(again.value)
    assert [] == list(model.calls)


class _Refusals(Actor):
    """Stands in for the Scheduler: keeps the work refusals it is told of."""

    def __init__(self, refused: list[WorkRefused]) -> None:
        self.refused = refused

    @handler
    async def work_refused(self, message: WorkRefused) -> None:
        self.refused.append(message)


async def test_a_scenario_round_that_cannot_go_on_ends_its_scenario_now_and_after_a_restart(
    tmp_path: Path,
) -> None:
    """A work order whose round stops helping itself by compacting is given up with the
    reason, which the Scheduler hears (it ends the scenario); the same round resumed by a
    restarted process is given up the same way, and heard again."""
    for n in range(12):
        (tmp_path / f"big{n}.txt").write_text(BIG)
    script = Script.model_validate({"actors": {"init": [*READS, "done"]}})
    order = Dispatch(
        scenario="leave",
        agent_context=AgentContext(task_summary="read them all"),
        dispatch_id="leave#1",
    )
    heard: list[list[WorkRefused]] = [[], []]
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("scheduler", _Refusals, heard[0])
        await rt.spawn("init", InitActor, _weak_agent(tmp_path, rt, ScriptedModel(script)))
        with pytest.raises(CompactionIneffectiveError):
            await rt.ask("init", order)
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("scheduler", _Refusals, heard[1])
        await rt.spawn("init", InitActor, _weak_agent(tmp_path, rt, ScriptedModel(script)))
        with anyio.fail_after(10):
            while not heard[1]:
                await anyio.wait_all_tasks_blocked()
    for refusals in heard:
        assert [("leave", "leave", "init", "leave#1")] == [
            (r.scenario, r.conversation, r.source, r.dispatch_id) for r in refusals
        ]
        assert refusals[0].reason.startswith("CompactionIneffectiveError: init: the context")


def _conversation(context_tokens: int) -> Conversation:
    conversation = Conversation(id="scenario:leave")
    conversation.start_round("go")
    conversation.append_step(
        [{"type": "text", "text": "done"}], [], {"input_tokens": context_tokens}
    )
    return conversation


def _record(before: int, after: int) -> Compaction:
    return Compaction(
        strategy="summarize",
        mode="llm",
        first_kept_seq=0,
        tokens_before=before,
        tokens_after=after,
        kept_steps=1,
        summary_tokens=10,
        latency_ms=1.0,
    )


BUDGET = ContextBudget(context_window=200_000, compact_threshold=100_000, keep_recent_steps=2)


async def test_two_weak_compactions_in_a_row_stop_compacting_and_log_the_figures() -> None:
    """Freeing 5K and then 3K of a 100K threshold (floor 10K) stops the conversation
    compacting, with one `context.compaction_ineffective` line giving the figures."""
    sink = _Sink()
    reports = CompactionReports(
        actor=lambda: "execute", workspace=None, token_log=sink, min_gain=0.1
    )
    conversation = _conversation(110_000)
    await reports.compacted(conversation, _record(120_000, 115_000), [], BUDGET)
    assert reports.stopped(conversation) is None
    await reports.compacted(conversation, _record(113_000, 110_000), [], BUDGET)
    assert [5_000, 3_000] == reports.stopped(conversation)
    ineffective = [line for line in sink.lines if line["event"] == "context.compaction_ineffective"]
    assert [
        {
            "event": "context.compaction_ineffective",
            "freed_tokens": [5_000, 3_000],
            "min_gain_tokens": 10_000,
            "compact_threshold": 100_000,
            "context_tokens": conversation.context_tokens,
            "context_window": 200_000,
        }
    ] == ineffective
    assert [None, None] == [
        line.get("audit") for line in sink.lines if line["event"] == "context.compacted"
    ]


async def test_a_good_compaction_between_weak_ones_resets_the_count() -> None:
    """Weak, good, weak: never two weak ones in a row, so compacting goes on."""
    sink = _Sink()
    reports = CompactionReports(
        actor=lambda: "execute", workspace=None, token_log=sink, min_gain=0.1
    )
    conversation = _conversation(110_000)
    for before, after in ((120_000, 115_000), (150_000, 60_000), (113_000, 110_000)):
        await reports.compacted(conversation, _record(before, after), [], BUDGET)
    assert reports.stopped(conversation) is None
    assert [] == [line for line in sink.lines if line["event"] == "context.compaction_ineffective"]


async def test_a_stopped_conversation_about_to_overflow_fails_with_a_clear_message() -> None:
    """Once stopped, a context within max_output_tokens of the window fails the round."""
    reports = CompactionReports(
        actor=lambda: "execute", workspace=None, token_log=_Sink(), min_gain=0.1
    )
    conversation = _conversation(190_000)
    for before, after in ((195_000, 192_000), (193_000, 190_000)):
        await reports.compacted(conversation, _record(before, after), [], BUDGET)
    compactor = Compactor(cast(CompactionHost, SimpleNamespace(name="execute")), reports)
    with pytest.raises(
        CompactionIneffectiveError, match=r"execute: the context .* about to overflow"
    ):
        compactor.may_compact(conversation, BUDGET)


def test_min_compaction_gain_is_a_validated_config_key() -> None:
    """The key defaults to 0.1, takes a share below 1, and is refused (by name) otherwise."""
    config = parse_config({"actors": {"execute": {"min_compaction_gain": 0.25}}})
    assert (0.25, 0.1) == (
        config.agent("execute").min_compaction_gain,
        config.agent("init").min_compaction_gain,
    )
    with pytest.raises(ConfigError, match=r"actors\.execute\.min_compaction_gain"):
        parse_config({"actors": {"execute": {"min_compaction_gain": 1.5}}})


async def test_conversations_compacting_at_once_each_log_their_own_figures() -> None:
    """An agent compacting two conversations at once (keyed concurrency) logs each
    `context.compacted` line with the figures of its own conversation's compaction."""
    sink = _Sink()
    reports = CompactionReports(
        actor=lambda: "execute", workspace=None, token_log=sink, min_gain=0.1
    )
    both_held = anyio.Event()
    held = 0

    async def compact(conversation: Conversation, record: Compaction) -> None:
        nonlocal held
        reports.hold(record.event())  # the strategy's event, as `compact()` emits it
        held += 1
        if held == 2:
            both_held.set()
        await both_held.wait()  # the other conversation's event is held meanwhile
        await reports.compacted(conversation, record, [], BUDGET)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(compact, _conversation(90_000), _record(120_000, 60_000))
        tasks.start_soon(compact, _conversation(90_000), _record(130_000, 70_000))
    logged = sorted(
        (line["tokens_before"], line["tokens_after"])
        for line in sink.lines
        if line["event"] == "context.compacted"
    )
    assert [(120_000, 60_000), (130_000, 70_000)] == logged
