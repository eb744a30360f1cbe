"""The Scheduler's state against damage and loss: damaged `.baton/scheduler/*.json` files, and
handoff ids that stay unique when an agent's journal is lost."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from structlog.testing import capture_logs

from baton import Actor, Runtime, handler
from baton.agents.journal import FileJournalStore
from baton.errors import StateFileError
from baton.models.scripted import Script, ScriptedModel
from baton.pipeline.errors import DamagedScenarioError
from baton.pipeline.host import open_pipeline
from baton.pipeline.messages import (
    Approve,
    Dispatch,
    HandoffDelivered,
    Reject,
    ScenarioQuery,
    StartScenario,
)
from baton.pipeline.packages import InitToExecuteContext
from baton.pipeline.roles import agent_setup
from baton.pipeline.scenario_damage import DamagedQuery
from baton.pipeline.scenario_state import ScenarioState
from baton.pipeline.scheduler import SchedulerActor
from tests.agents.test_agent import config
from tests.pipeline.test_scheduler import (
    DESIGN,
    NAME,
    design_turns,
    iteration_turns,
    make_scenario,
    state_of,
    unblock,
    wait_for_phase,
)


async def settled(rt: Runtime) -> ScenarioState:
    """The scenario's state once every actor is idle with an empty mailbox (nothing left that
    could move it), or once it awaits approval."""
    with anyio.fail_after(20):
        while True:
            state = await state_of(rt)
            idle = all(not s.busy and s.mailbox_depth == 0 for s in rt.status())
            if state.phase == "awaiting_approval" or idle:
                return state
            await anyio.wait_all_tasks_blocked()


async def test_a_lost_agent_journal_does_not_make_a_new_handoff_a_duplicate(
    tmp_path: Path,
) -> None:
    """Init's journal emptied between runs: its next handoff starts from turn 0 again, yet its
    id names the work order it answers, so the Scheduler applies it and the scenario reaches
    the approval gate instead of waiting for ever."""
    make_scenario(
        tmp_path,
        init=design_turns(1) + design_turns(2),
        execute=iteration_turns(1, 3, complete=True),
    )
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        await rt.ask("scheduler", StartScenario(scenario=NAME))
        first = await wait_for_phase(rt, "awaiting_approval")
    (tmp_path / ".baton" / "journal" / "init" / f"{NAME}.jsonl").write_bytes(b"")
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        await rt.ask("scheduler", Reject(scenario=NAME, reason="cover half-day leave"))
        second = await settled(rt)
    assert first.pending_approval is not None
    assert second.pending_approval is not None
    ids = [first.pending_approval["handoff_id"], second.pending_approval["handoff_id"]]
    assert ("awaiting_approval", 2) == (second.phase, len(set(ids)))
    assert f"{NAME}#2" in ids[1]


class Ignore(Actor):
    """Stands in for an agent that takes work orders and never answers."""

    @handler
    async def dispatch(self, message: Dispatch) -> None:
        return None


async def test_a_duplicate_handoff_that_leaves_the_scenario_waiting_is_shown(
    tmp_path: Path,
) -> None:
    """A handoff id applied before, arriving while the scenario waits on its sender for the
    current work order, is still dropped, but with a warning and a `waiting` note in the
    state naming the scenario and what to do."""
    make_scenario(tmp_path, init=[], execute=[])
    async with Runtime.open(tmp_path) as rt:
        setup = agent_setup(
            "scheduler",
            config(),
            workspace=tmp_path,
            model=ScriptedModel(Script()),
            journal=FileJournalStore(tmp_path),
            token_log=rt.token_log,
        )
        await rt.spawn("scheduler", SchedulerActor, setup, tmp_path)
        await rt.spawn("init", Ignore)
        await rt.ask("scheduler", StartScenario(scenario=NAME))
        package = InitToExecuteContext(
            user_requirement="r", design_artifacts=DESIGN, timestamp="2026-01-04T10:30:00"
        )
        handoff = HandoffDelivered(
            scenario=NAME, source="init", handoff_id="init:mini:1:init_to_execute", package=package
        )
        await rt.ask("scheduler", handoff)
        await rt.ask("scheduler", Reject(scenario=NAME, reason="again"))
        with capture_logs() as logs:
            await rt.ask("scheduler", handoff)
        state = await state_of(rt)
    assert "designing" == state.phase
    assert state.waiting is not None
    assert "init handed off 'init:mini:1:init_to_execute' again" in state.waiting
    assert f"move {tmp_path / '.baton/scheduler/mini.json'} aside" in state.waiting
    (warning,) = [e for e in logs if e["event"] == "scheduler.duplicate_handoff_while_waiting"]
    assert ("warning", NAME) == (warning["log_level"], warning["scenario"])


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "is empty"),
        (b"\x00garbage{", "is not JSON (Invalid JSON: expected value at line 1 column 1)"),
        (b"\xff\xfe", "is not UTF-8 text"),
        (b'{"scenario": "broken"}', "is not a valid scenario record (requirement: Field required"),
    ],
)
async def test_a_damaged_scheduler_state_file_is_one_line_and_the_rest_work(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    """Garbage or an empty `.baton/scheduler/broken.json`: the Scheduler starts, warns in one
    line naming the file and to move it aside, refuses that scenario with the same line,
    and runs the others; moved aside, the scenario starts afresh."""
    make_scenario(tmp_path, init=design_turns(1), execute=iteration_turns(1, 3, complete=True))
    broken = tmp_path / ".baton" / "scheduler" / "broken.json"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(content)
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}) as pipeline:
        with pytest.raises(StateFileError) as refused:
            await rt.ask("scheduler", StartScenario(scenario="broken", requirement="r"))
        with pytest.raises(StateFileError):
            await rt.ask("scheduler", ScenarioQuery(scenario="broken"))
        await rt.ask("scheduler", StartScenario(scenario=NAME))
        good = await wait_for_phase(rt, "awaiting_approval")
        broken.rename(broken.with_suffix(".json.damaged"))
        afresh = await rt.ask("scheduler", StartScenario(scenario="broken", requirement="r"))
    (warning,) = pipeline.warnings
    assert str(refused.value) == warning
    assert warning.startswith(f"{broken} {problem}")
    assert f"move it aside (e.g. `mv {broken} {broken}.damaged`)" in warning
    assert 1 == len(warning.splitlines())
    assert ("awaiting_approval", True) == (good.phase, afresh.started)


async def test_deciding_a_scenario_whose_record_is_damaged_names_the_file(
    tmp_path: Path,
) -> None:
    """Approve and reject of a scenario whose record is damaged raise the error naming the
    file, what is wrong and what to do (not "submit it first"), with no dead letter;
    `DamagedQuery` lists it until the file is moved aside."""
    make_scenario(tmp_path, init=[], execute=[])
    broken = tmp_path / ".baton" / "scheduler" / "broken.json"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"{not json")
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        with pytest.raises(DamagedScenarioError) as approved:
            await rt.ask("scheduler", Approve(scenario="broken"))
        with pytest.raises(DamagedScenarioError) as rejected:
            await rt.ask("scheduler", Reject(scenario="broken", reason="no"))
        listed = await rt.ask("scheduler", DamagedQuery())
        broken.rename(broken.with_suffix(".json.damaged"))
        after = await rt.ask("scheduler", DamagedQuery())
        dead_letters = rt.dead_letters.total
    for refused in (approved.value, rejected.value):
        assert str(refused).startswith(f"{broken} is not JSON (")
        assert f"move it aside (e.g. `mv {broken} {broken}.damaged`)" in str(refused)
    [damaged] = listed
    assert ("broken", str(broken)) == (damaged.scenario, damaged.path)
    assert damaged.problem.startswith("is not JSON (")
    assert damaged.fix.startswith(f"move it aside (e.g. `mv {broken} {broken}.damaged`)")
    assert ([], 0) == (after, dead_letters)


async def test_a_named_pipe_for_a_record_is_refused_without_waiting(tmp_path: Path) -> None:
    """A named pipe at `.baton/scheduler/<name>.json` is never opened to wait: the Scheduler
    starts and refuses that scenario, saying the file is a named pipe."""
    make_scenario(tmp_path, init=[], execute=[])
    fifo = tmp_path / ".baton" / "scheduler" / "piped.json"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    try:
        with anyio.fail_after(10):
            async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}) as pipeline:
                with pytest.raises(DamagedScenarioError) as refused:
                    await rt.ask("scheduler", ScenarioQuery(scenario="piped"))
    finally:
        unblock(fifo)
    assert str(refused.value).startswith(f"{fifo} is not a regular file but a named pipe")
    assert [str(refused.value)] == pipeline.warnings
