"""An agent registers the facts of what it receives, sends, writes and reads, and every
request after a forgetful compaction carries them, whatever the strategy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from baton import Runtime
from baton.agents.agent_config import AgentConfig
from baton.agents.journal import FileJournalStore
from baton.context.ledger_patterns import FactPatterns
from baton.models.scripted import Script, ScriptedModel
from baton.pipeline.agent_context import AgentContext
from baton.pipeline.ledger_facts import DEFAULT_FACT_PATTERNS, package_facts
from baton.pipeline.messages import Dispatch, HandoffDelivered, RoundEnded
from baton.pipeline.packages import ExecuteToInitContext
from baton.pipeline.roles import InitActor, agent_setup
from baton.pipeline.summaries import InitSummary
from baton.testing import capture_token_log
from tests.agents.test_agent import Recorder, read, write

ITERATION = "scenarios/leave/execution_outputs/iteration_1"
DESIGN = {
    "unified_scenario_design_path": "scenarios/leave/unified_scenario_design.yaml",
    "business_rules_path": "scenarios/leave/BusinessRules.md",
    "format_specifications_path": "scenarios/leave/format_specifications.json",
}


def _returned_package() -> ExecuteToInitContext:
    return ExecuteToInitContext(
        timestamp="2026-11-23T10:00:00Z",
        execution_output_dir=ITERATION,
        trigger_reason="layer-1 problems",
        iteration_summary={"total_samples": 20, "failed_samples": 3},
        failure_samples_index=[
            {
                "sample_id": "BS_MT_007",
                "sample_path": "samples/BS_MT_007.json",
                "trace_path": "execution_traces/BS_MT_007_trace.json",
            }
        ],
        layer1_problems_report_path="layer1_problems_report.json",
        modification_suggestions_summary=["state the carry-over rule"],
    )


def _script(rounds_two_reads: int) -> ScriptedModel:
    forgetful = InitSummary.empty()
    turns: list[Any] = [
        read("scenarios/leave/notes.txt"),
        {"tool_use": [write(path, "x: 1\n")["tool_use"] for path in DESIGN.values()]},
        {
            "tool_use": {
                "name": "handoff_to_execute",
                "input": {"user_requirement": "请假申请", "design_artifacts": DESIGN},
            }
        },
        "Handed off.",
        *[read("scenarios/leave/big.txt") for _ in range(rounds_two_reads)],
        "Round two done.",
    ]
    actor = {"turns": turns, "compactions": [forgetful] * 20}
    return ScriptedModel(Script.model_validate({"actors": {"init": actor}}))


@pytest.mark.parametrize("strategy", ["summarize", "sliding_window", "extract_state"])
async def test_every_request_after_a_compaction_carries_the_registered_facts(
    tmp_path: Path, strategy: str
) -> None:
    """Received package paths and ids, dispatch ids, written and sent paths, an id from a
    tool result and one from a user message (a configured pattern) are in every request
    after the first compaction, though the summaries forget everything."""
    leave = tmp_path / "scenarios" / "leave"
    leave.mkdir(parents=True)
    (leave / "notes.txt").write_text("BS_MT_042 failed the balance checker\n")
    (leave / "big.txt").write_text("\n".join(f"row {n}: {'y' * 90}" for n in range(300)))
    model = _script(6)
    cfg = AgentConfig.model_validate(
        {
            "model": "claude-opus-4-5",
            "context_window": 40_000,
            "compact_threshold": 6_000,
            "keep_recent_steps": 2,
            "max_output_tokens": 1_000,
            "strategy": strategy,
            "fact_patterns": [r"TICKET-\d+"],
        }
    )
    received: list[HandoffDelivered] = []
    ended: list[RoundEnded] = []
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("scheduler", Recorder, received, ended)
        setup = agent_setup(
            "init",
            cfg,
            workspace=tmp_path,
            model=model,
            journal=FileJournalStore(tmp_path),
            token_log=rt.token_log,
        )
        await rt.spawn("init", InitActor, setup)
        with capture_token_log() as lines:
            first = Dispatch(
                scenario="leave",
                agent_context=AgentContext(task_summary="review the failures of TICKET-4711"),
                package=_returned_package(),
                dispatch_id="leave#1",
            )
            await rt.ask("init", first)
            second = Dispatch(
                scenario="leave",
                agent_context=AgentContext(task_summary="check the big file"),
                dispatch_id="leave#2",
            )
            await rt.ask("init", second)
    facts = [
        ITERATION,
        f"{ITERATION}/samples/BS_MT_007.json",
        f"{ITERATION}/execution_traces/BS_MT_007_trace.json",
        f"{ITERATION}/layer1_problems_report.json",
        "BS_MT_007",
        "leave#1",
        "leave#2",
        "TICKET-4711",
        "BS_MT_042",
        *DESIGN.values(),
    ]
    compacted_at = next(i for i, line in enumerate(lines) if line["event"] == "context.compacted")
    later_turns = {
        line["turn"]
        for line in lines[compacted_at:]
        if line["event"] == "model.call" and line["purpose"] == "turn"
    }
    payloads = [
        call.payload
        for call in model.calls
        if call.context.purpose == "turn" and call.context.turn in later_turns
    ]
    assert len(payloads) >= 3
    for payload in payloads:
        shown = json.dumps([payload.get("system"), payload["messages"]], ensure_ascii=False)
        assert [] == [fact for fact in facts if fact not in shown]


def test_a_package_registers_its_paths_and_the_ids_it_names() -> None:
    """A package's facts: its referenced paths, then every `*_id` value it holds."""
    facts = package_facts(_returned_package(), source="execute_to_init")
    assert [
        ("path", ITERATION),
        ("path", f"{ITERATION}/samples/BS_MT_007.json"),
        ("path", f"{ITERATION}/execution_traces/BS_MT_007_trace.json"),
        ("path", f"{ITERATION}/layer1_problems_report.json"),
        ("id", "BS_MT_007"),
    ] == [(f.kind, f.value) for f in facts]


def test_the_default_patterns_find_the_schemas_ids_and_dispatch_ids() -> None:
    """Sample ids, problem ids and dispatch ids match the defaults; tool-use ids do not."""
    patterns = FactPatterns(DEFAULT_FACT_PATTERNS)
    text = "BS_MT_001 and L1P_003 (leave@2#4, toolu_01AbC) failed"
    assert ["L1P_003", "BS_MT_001", "leave@2#4"] == patterns.find(text)
