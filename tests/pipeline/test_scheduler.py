"""Scheduler: the scenario state machine, HITL-1, the iteration policy, persistence."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from baton import Runtime
from baton.agents.journal import FileJournalStore
from baton.errors import ConfigError
from baton.pipeline.artifacts import FailureSummary, Layer1ProblemsReport, Sample
from baton.pipeline.host import open_pipeline
from baton.pipeline.messages import Approve, HandoffDelivered, Reject, ScenarioQuery, StartScenario
from baton.pipeline.packages import InitToExecuteContext
from baton.pipeline.scenario_state import ScenarioRefused, ScenarioState
from baton.pipeline.scheduler import MAX_NUDGES
from baton.testing import read_token_log

NAME = "mini"
BASE = f"scenarios/{NAME}"
DESIGN = {
    "unified_scenario_design_path": f"{BASE}/unified_scenario_design.yaml",
    "business_rules_path": f"{BASE}/BusinessRules.md",
    "format_specifications_path": f"{BASE}/format_specifications.json",
}
IDS = ["BS_MT_001", "BS_MT_002", "BS_MT_003"]


def write(path: str, content: str) -> dict[str, Any]:
    return {"type": "tool_use", "name": "Write", "input": {"path": path, "content": content}}


def call(name: str, **input_: Any) -> dict[str, Any]:
    return {"content": [{"type": "tool_use", "name": name, "input": input_}]}


def design_turns(version: int) -> list[dict[str, Any]]:
    rules = f"# Leave rules v{version}\n1. Deduct the balance when the application is created.\n"
    return [
        {
            "content": [
                write(
                    DESIGN["unified_scenario_design_path"],
                    f"scenario: {NAME}\nversion: {version}\n",
                ),
                write(DESIGN["business_rules_path"], rules),
                write(DESIGN["format_specifications_path"], '{"samples": {}}'),
            ]
        },
        call("handoff_to_execute", user_requirement="请假申请", design_artifacts=DESIGN),
        {"content": [{"type": "text", "text": f"Design v{version} handed off."}]},
    ]


def iteration_turns(iteration: int, passed: int, *, complete: bool) -> list[dict[str, Any]]:
    out = f"{BASE}/execution_outputs/iteration_{iteration}"
    failed = IDS[passed:]
    summary = FailureSummary(
        iteration=iteration,
        total_samples=len(IDS),
        passed_samples=passed,
        failed_samples=len(failed),
        success_rate=passed / len(IDS),
        failures_by_cause={"Layer1_BusinessRule": failed} if failed else {},
    )
    report = Layer1ProblemsReport.model_validate(
        {
            "report_version": "1.0",
            "generated_at": "2026-01-04T15:30:00",
            "iteration": iteration,
            "total_samples": len(IDS),
            "failed_samples": len(failed),
            "failure_rate": len(failed) / len(IDS),
            "layer1_problems": [
                {
                    "problem_id": "L1P_001",
                    "problem_type": "BusinessRule_Unclear",
                    "severity": "critical",
                    "title": "余额扣减时机未明确",
                    "description": "rules omit when to deduct",
                    "affected_samples": failed,
                    "affected_count": len(failed),
                    "evidence_summary": "applications created, balance unchanged",
                    "typical_case_id": failed[0],
                    "suggested_fix": {
                        "target": "BusinessRules.md",
                        "section": "## 请假申请流程",
                        "modification": "deduct right after creating the application",
                        "rationale": "make the step explicit",
                    },
                }
            ]
            if failed
            else [],
            "modification_priority": [],
        }
    )
    writes = [
        write(f"{out}/samples/{sid}.json", Sample(sample_id=sid).model_dump_json()) for sid in IDS
    ]
    writes.append(write(f"{out}/failure_summary.json", summary.model_dump_json()))
    writes.append(write(f"{out}/layer1_problems_report.json", report.model_dump_json()))
    if complete:
        handoff = call(
            "complete_scenario",
            execution_output_dir=out,
            success_rate=passed / len(IDS),
            iteration_summary={"total_samples": len(IDS)},
            report_paths={"layer1_problems_report": "layer1_problems_report.json"},
        )
    else:
        handoff = call(
            "return_to_init",
            execution_output_dir=out,
            trigger_reason="critical share above 30%",
            iteration_summary={"total_samples": len(IDS), "failed_samples": len(failed)},
            failure_samples_index=[
                {"sample_id": sid, "sample_path": f"samples/{sid}.json"} for sid in failed
            ],
            layer1_problems_report_path="layer1_problems_report.json",
            modification_suggestions_summary=["deduct the balance on creation"],
        )
    return [
        {"content": writes},
        handoff,
        {"content": [{"type": "text", "text": f"Iteration {iteration} reported."}]},
    ]


def make_scenario(
    workspace: Path,
    *,
    init: list[dict[str, Any]],
    execute: list[dict[str, Any]],
    auto_approve: bool = False,
    max_iterations: int = 3,
) -> None:
    folder = workspace / BASE
    folder.mkdir(parents=True)
    (folder / "script.json").write_text(json.dumps({"actors": {"init": init, "execute": execute}}))
    (folder / "scenario.toml").write_text(
        f'requirement = "请假申请"\nauto_approve = {str(auto_approve).lower()}\n'
        f'offline_script = "script.json"\n[policy]\nmax_iterations = {max_iterations}\n'
    )


def unblock(fifo: Path) -> None:
    """Open `fifo` for writing and close it: a reader blocked on it (the bug) goes on."""
    with contextlib.suppress(OSError):  # ENXIO: no reader waits on it
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


async def state_of(rt: Runtime) -> ScenarioState:
    state = await rt.ask("scheduler", ScenarioQuery(scenario=NAME))
    assert isinstance(state, ScenarioState)
    return state


async def wait_for_phase(rt: Runtime, *phases: str) -> ScenarioState:
    """Poll the Scheduler (between polls every task has gone idle) until a phase is reached."""
    with anyio.fail_after(20):
        while True:
            state = await state_of(rt)
            if state.phase in phases:
                return state
            await anyio.wait_all_tasks_blocked()


async def test_a_scenario_completes_after_approval(tmp_path: Path) -> None:
    """Init designs and hands off, the handoff waits, approval sends it to Execute, and the
    passing iteration completes the scenario."""
    make_scenario(tmp_path, init=design_turns(1), execute=iteration_turns(1, 3, complete=True))
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        started = await rt.ask("scheduler", StartScenario(scenario=NAME))
        assert (True, "designing") == (started.started, started.phase)
        waiting = await wait_for_phase(rt, "awaiting_approval")
        assert waiting.pending_approval is not None
        assert "init_to_execute" == waiting.pending_approval["handoff_type"]
        await rt.ask("scheduler", Approve(scenario=NAME))
        done = await wait_for_phase(rt, "completed", "failed")
    assert ("completed", 1) == (done.phase, done.iteration)
    events = read_token_log(tmp_path)
    sent = {(e["from"], e["handoff_type"]) for e in events if e["event"] == "handoff.sent"}
    assert {("init", "init_to_execute"), ("execute", "scenario_complete")} <= sent
    assert {"offline-scripted"} == {e["model"] for e in events if e["event"] == "model.call"}


async def test_a_rejection_reaches_init_with_its_reason(tmp_path: Path) -> None:
    """Rejecting the pending handoff sends Init a new round whose context holds the reason."""
    make_scenario(
        tmp_path,
        init=design_turns(1) + design_turns(2),
        execute=iteration_turns(1, 3, complete=True),
    )
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        await rt.ask("scheduler", StartScenario(scenario=NAME))
        await wait_for_phase(rt, "awaiting_approval")
        state = await rt.ask("scheduler", Reject(scenario=NAME, reason="cover half-day leave"))
        assert "designing" == state.phase
        again = await wait_for_phase(rt, "awaiting_approval")
    assert again.pending_approval is not None
    journal = (tmp_path / ".baton/journal/init" / f"{NAME}.jsonl").read_text()
    rounds = [json.loads(line.split(" ", 1)[1]) for line in journal.splitlines()]
    inputs = [r["text"] for r in rounds if r["type"] == "round"]
    assert 2 == len(inputs)
    assert "cover half-day leave" in inputs[1]
    assert "cover half-day leave" not in inputs[0]


async def test_max_iterations_ends_the_scenario_failed_with_the_report(tmp_path: Path) -> None:
    """An iteration below the threshold at max_iterations fails, naming the last report."""
    make_scenario(
        tmp_path,
        init=design_turns(1),
        execute=iteration_turns(1, 1, complete=False),
        auto_approve=True,
        max_iterations=1,
    )
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        await rt.ask("scheduler", StartScenario(scenario=NAME))
        done = await wait_for_phase(rt, "completed", "failed")
    report = f"{BASE}/execution_outputs/iteration_1/layer1_problems_report.json"
    assert ("failed", report) == (done.phase, done.last_report)
    assert done.reason is not None
    assert report in done.reason


async def test_submitting_an_active_scenario_starts_nothing_new(tmp_path: Path) -> None:
    """A second submit of a running scenario reports its state and does not restart it."""
    make_scenario(tmp_path, init=design_turns(1), execute=iteration_turns(1, 3, complete=True))
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        await rt.ask("scheduler", StartScenario(scenario=NAME))
        await wait_for_phase(rt, "awaiting_approval")
        again = await rt.ask("scheduler", StartScenario(scenario=NAME))
        assert (False, "awaiting_approval") == (again.started, again.phase)


async def test_state_survives_a_restart_and_duplicate_handoffs_are_ignored(tmp_path: Path) -> None:
    """After a restart the pending approval is still there; a re-sent handoff is not reapplied."""
    make_scenario(tmp_path, init=design_turns(1), execute=iteration_turns(1, 3, complete=True))
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        await rt.ask("scheduler", StartScenario(scenario=NAME))
        waiting = await wait_for_phase(rt, "awaiting_approval")
    assert waiting.pending_approval is not None
    handoff_id = waiting.pending_approval["handoff_id"]
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        assert "awaiting_approval" == (await state_of(rt)).phase
        package = InitToExecuteContext(
            user_requirement="请假申请", design_artifacts=DESIGN, timestamp="2026-01-04T10:30:00"
        )
        await rt.ask(
            "scheduler",
            HandoffDelivered(scenario=NAME, source="init", handoff_id=handoff_id, package=package),
        )
        assert "awaiting_approval" == (await state_of(rt)).phase
        await rt.ask("scheduler", Approve(scenario=NAME))
        done = await wait_for_phase(rt, "completed", "failed")
    assert "completed" == done.phase


async def test_approving_without_a_pending_handoff_is_refused(tmp_path: Path) -> None:
    """Approve on an unknown scenario is answered with the refusal, at once, without retries
    and without a dead letter."""
    make_scenario(tmp_path, init=design_turns(1), execute=iteration_turns(1, 3, complete=True))
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        refused = await rt.ask("scheduler", Approve(scenario=NAME))
        assert 0 == next(s.restarts for s in rt.status() if s.name == "scheduler")
        assert 0 == rt.dead_letters.total
    assert ScenarioRefused(scenario=NAME, reason="no scenario 'mini'; submit it first") == refused


async def test_submitting_with_auto_approve_skips_the_approval_gate(tmp_path: Path) -> None:
    """`auto_approve=True` on submit overrides the scenario's gate: it runs to completion."""
    make_scenario(tmp_path, init=design_turns(1), execute=iteration_turns(1, 3, complete=True))
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        await rt.ask("scheduler", StartScenario(scenario=NAME, auto_approve=True))
        done = await wait_for_phase(rt, "completed", "failed", "awaiting_approval")
    assert "completed" == done.phase


async def test_an_agent_that_never_hands_off_is_reminded_then_the_scenario_fails(
    tmp_path: Path,
) -> None:
    """Rounds ended without a handoff get a reminder naming the tool; after MAX_NUDGES the
    scenario fails with the agent's last words instead of waiting for ever."""
    words = [
        {"content": [{"type": "text", "text": f"Still pondering, take {n}."}]} for n in range(3)
    ]
    make_scenario(tmp_path, init=words, execute=[])
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        await rt.ask("scheduler", StartScenario(scenario=NAME))
        done = await wait_for_phase(rt, "completed", "failed")
    assert "failed" == done.phase
    assert done.reason is not None
    assert f"init ended {MAX_NUDGES + 1} rounds without a handoff" in done.reason
    assert "Still pondering, take 2." in done.reason
    journal = await FileJournalStore(tmp_path).read("init", NAME)
    inputs = [r["text"] for r in journal if r["type"] == "round"]
    assert MAX_NUDGES + 1 == len(inputs)
    assert all("call handoff_to_execute" in text for text in inputs[1:])
    assert "call handoff_to_execute" not in inputs[0]


async def test_a_resubmitted_ended_scenario_runs_afresh(tmp_path: Path) -> None:
    """Submitting a scenario that ended starts run 2 in new conversations (the first run's
    history does not leak in), and a late handoff from run 1 is not applied to run 2."""
    make_scenario(tmp_path, init=design_turns(1), execute=iteration_turns(1, 3, complete=True))
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        await rt.ask("scheduler", StartScenario(scenario=NAME, auto_approve=True))
        first = await wait_for_phase(rt, "completed", "failed")
        second = await rt.ask("scheduler", StartScenario(scenario=NAME))
        waiting = await wait_for_phase(rt, "awaiting_approval")
        assert waiting.pending_approval is not None
        package = InitToExecuteContext(
            user_requirement="stale", design_artifacts=DESIGN, timestamp="2026-01-04T10:30:00"
        )
        stale = HandoffDelivered(
            scenario=NAME, conversation=NAME, source="init", handoff_id="init:x:9", package=package
        )
        await rt.ask("scheduler", stale)
        still = await state_of(rt)
        await rt.ask("scheduler", Approve(scenario=NAME))
        done = await wait_for_phase(rt, "completed", "failed")
    assert ("completed", True, "completed") == (first.phase, second.started, done.phase)
    assert still.pending_approval == waiting.pending_approval
    journal = FileJournalStore(tmp_path)
    for actor in ("init", "execute"):
        assert {NAME, f"{NAME}@2"} <= set(await journal.conversations(actor))
        rounds = [r for r in await journal.read(actor, f"{NAME}@2") if r["type"] == "round"]
        assert 1 == len(rounds)


async def test_a_scenario_toml_that_is_a_directory_or_a_pipe_is_named_as_such(
    tmp_path: Path,
) -> None:
    """Submitting a scenario whose `scenario.toml` is a directory, or a named pipe, is
    refused at once with a message saying what is there (not "does not exist"), also when
    a requirement is given; the pipe is never opened to wait for a writer."""
    for name in ("folder", "piped"):
        (tmp_path / "scenarios" / name).mkdir(parents=True)
    folder = tmp_path / "scenarios" / "folder" / "scenario.toml"
    folder.mkdir()
    pipe = tmp_path / "scenarios" / "piped" / "scenario.toml"
    os.mkfifo(pipe)
    try:
        with anyio.fail_after(10):
            async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
                refusals = []
                for name, requirement in [("folder", None), ("folder", "r"), ("piped", "r")]:
                    with pytest.raises(ConfigError) as refused:
                        await rt.ask(
                            "scheduler", StartScenario(scenario=name, requirement=requirement)
                        )
                    refusals.append(str(refused.value))
    finally:
        unblock(pipe)
    assert [True, True, True] == [
        refusals[0].startswith(f"{folder} is a directory"),
        refusals[1].startswith(f"{folder} is a directory"),
        refusals[2].startswith(f"{pipe} is a named pipe"),
    ]
