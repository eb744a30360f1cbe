"""The Scheduler keyed by scenario: one scenario's task summary, waiting on the model, holds up
neither the other scenarios nor the queries, and a query shows each record as last saved."""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from baton import Runtime
from baton.agents.journal import FileJournalStore
from baton.context.payload import Payload
from baton.models.protocol import ModelResponse, current_call
from baton.models.scripted import Script, ScriptedModel
from baton.pipeline.messages import Approve, HandoffDelivered, ScenarioQuery, StartScenario
from baton.pipeline.packages import InitToExecuteContext
from baton.pipeline.roles import agent_setup
from baton.pipeline.scenario_state import ScenarioState
from baton.pipeline.scheduler import SchedulerActor
from tests.agents.test_agent import config
from tests.pipeline.test_scheduler import DESIGN, NAME, make_scenario
from tests.pipeline.test_scheduler_state import Ignore

OTHER = "other"


class HeldSummaries(ScriptedModel):
    """The scripted model, except that a call for a scenario in `held` waits for `release`."""

    def __init__(self) -> None:
        super().__init__(Script())
        self.held: set[str] = set()
        self.holding = anyio.Event()
        self.release = anyio.Event()

    async def create(self, payload: Payload) -> ModelResponse:
        call = current_call()
        if call is not None and call.scenario in self.held:
            self.holding.set()
            await self.release.wait()
        return await super().create(payload)


async def spawn(rt: Runtime, workspace: Path, model: HeldSummaries, *, keys: int = 8) -> None:
    """The Scheduler on `model`, with agents that take its work orders and never answer."""
    setup = agent_setup(
        "scheduler",
        config(max_concurrent_keys=keys),
        workspace=workspace,
        model=model,
        journal=FileJournalStore(workspace),
        token_log=rt.token_log,
    )
    await rt.spawn("scheduler", SchedulerActor, setup, workspace)
    await rt.spawn("init", Ignore)
    await rt.spawn("execute", Ignore)


async def test_status_is_answered_while_a_summary_waits_with_one_key(tmp_path: Path) -> None:
    """While a scenario's first task summary waits on the model, every scenario's state is
    answered, even with `max_concurrent_keys = 1` (the queries have a key of their own); the
    held submit is answered once its summary is written."""
    make_scenario(tmp_path, init=[], execute=[])
    model = HeldSummaries()
    model.held.add(NAME)
    answers: list[ScenarioState] = []
    async with Runtime.open(tmp_path) as rt:
        await spawn(rt, tmp_path, model, keys=1)

        async def submit_held() -> None:
            answers.append(await rt.ask("scheduler", StartScenario(scenario=NAME)))

        async with anyio.create_task_group() as tg:
            tg.start_soon(submit_held)
            with anyio.fail_after(10):
                await model.holding.wait()
                listed = await rt.ask("scheduler", ScenarioQuery())
            model.release.set()
    assert [] == listed
    assert [(NAME, "designing", True)] == [(s.scenario, s.phase, s.started) for s in answers]


async def test_another_scenario_moves_while_one_summary_waits(tmp_path: Path) -> None:
    """With the default keys, a second scenario's submit is answered, work order sent, while
    the first scenario's summary still waits on the model."""
    make_scenario(tmp_path, init=[], execute=[])
    model = HeldSummaries()
    model.held.add(NAME)
    async with Runtime.open(tmp_path) as rt:
        await spawn(rt, tmp_path, model)
        async with anyio.create_task_group() as tg:
            tg.start_soon(rt.ask, "scheduler", StartScenario(scenario=NAME))
            with anyio.fail_after(10):
                await model.holding.wait()
                other = await rt.ask("scheduler", StartScenario(scenario=OTHER, requirement="r"))
                listed = await rt.ask("scheduler", ScenarioQuery())
            model.release.set()
    assert (True, "designing") == (other.started, other.phase)
    assert [OTHER] == [state.scenario for state in listed]


async def test_a_query_shows_the_state_last_saved_while_a_transition_waits(
    tmp_path: Path,
) -> None:
    """While an approval's task summary waits on the model, the scenario's state is answered
    as saved (awaiting approval, the handoff pending), as its record file says; once the
    summary is written the approval's `executing` is saved and shown."""
    make_scenario(tmp_path, init=[], execute=[])
    model = HeldSummaries()
    record_file = tmp_path / ".baton" / "scheduler" / f"{NAME}.json"
    async with Runtime.open(tmp_path) as rt:
        await spawn(rt, tmp_path, model)
        await rt.ask("scheduler", StartScenario(scenario=NAME))
        package = InitToExecuteContext(
            user_requirement="r", design_artifacts=DESIGN, timestamp="2026-01-04T10:30:00"
        )
        handoff = HandoffDelivered(
            scenario=NAME, source="init", handoff_id="init:mini:1:init_to_execute", package=package
        )
        await rt.ask("scheduler", handoff)
        model.held.add(NAME)
        async with anyio.create_task_group() as tg:
            tg.start_soon(rt.ask, "scheduler", Approve(scenario=NAME))
            with anyio.fail_after(10):
                await model.holding.wait()
                during = await rt.ask("scheduler", ScenarioQuery(scenario=NAME))
            saved_during = json.loads(record_file.read_text())["phase"]
            model.release.set()
        after = await rt.ask("scheduler", ScenarioQuery(scenario=NAME))
    assert ("awaiting_approval", "awaiting_approval") == (during.phase, saved_during)
    assert during.pending_approval is not None
    assert ("executing", None) == (after.phase, after.pending_approval)
    assert "executing" == json.loads(record_file.read_text())["phase"]
