"""`SchedulerActor`: moves each scenario between Init and Execute, under human approval and the
iteration policy (docs/handoffs.md, "Delivery and the Scheduler").

Per scenario: designing → awaiting_approval → executing → returned_to_init → designing … →
completed | failed | stopped, persisted after every transition. Before each dispatch the
Scheduler's own model writes the task summary the agent reads first; those calls run in the
scenario's conversation of the Scheduler, so its context has a budget and compacts too.

The Scheduler is keyed by scenario (docs/handoffs.md, "Delivery and the Scheduler"): each
scenario's messages are handled one at a time, in order, and the scenarios side by side, so
one scenario's task summary holds up no other. The queries have a key of their own and read
`records`, which holds each scenario's record as last saved: a transition works on a copy,
published once it is saved.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any

import anyio

from baton._log import get_logger
from baton.agents.agent_loop import AgentLoop
from baton.agents.agent_setup import AgentSetup
from baton.agents.errors import SpendCapReachedFailure
from baton.context.strategy import ContextBudget
from baton.errors import UsageError
from baton.models.errors import RecordingDivergedError
from baton.pipeline.agent_context import AgentContext
from baton.pipeline.artifacts import ArtifactStore
from baton.pipeline.defaults import role_budget
from baton.pipeline.iteration_reports import (
    emit_iteration_ended,
    emit_scenario_ended,
    iteration_findings,
    iteration_of,
    read_iteration,
)
from baton.pipeline.messages import (
    Approve,
    HandoffDelivered,
    Reject,
    RoundEnded,
    RoundWaiting,
    ScenarioQuery,
    SpendCapReached,
    StartScenario,
    WorkRefused,
)
from baton.pipeline.packages import (
    ExecuteToInitContext,
    HandoffPackage,
    InitToExecuteContext,
    ScenarioCompletion,
)
from baton.pipeline.roles import EXECUTE, INIT
from baton.pipeline.run_archive import archive_run, archive_stored_run
from baton.pipeline.scenario import (
    SCENARIO_FILE,
    SCENARIOS_DIR,
    PendingHandoff,
    ScenarioConfig,
    ScenarioRecord,
    load_scenario,
    scenario_dir,
)
from baton.pipeline.scenario_damage import DamagedQuery, DamagedScenario
from baton.pipeline.scenario_inputs import upload_inputs
from baton.pipeline.scenario_state import ScenarioRefused, ScenarioState
from baton.pipeline.scenario_store import FileScenarioStore, ScenarioStore
from baton.pipeline.scheduler_memory import SchedulerMemory, iteration_finding
from baton.pipeline.scheduling_policy import Decision, decide
from baton.pipeline.spend import SpendLedger
from baton.pipeline.work_orders import WorkOrders
from baton.runtime.actor import Actor, handler
from baton.storage.local import remote_store

log = get_logger(__name__)

MAX_NUDGES = 2
"""Rounds an agent may end without a handoff, each answered by a reminder, before failing."""

_WAITING_ON = {"designing": INIT, "returned_to_init": INIT, "executing": EXECUTE}
_HANDOFF_TOOL_HINT = {
    INIT: "handoff_to_execute",
    EXECUTE: "return_to_init (the design must change) or complete_scenario (criteria met)",
}


def default_budgets() -> dict[str, ContextBudget]:
    """Init's and Execute's budgets when no configuration is given: the built-in ones."""
    return {role: role_budget(role) for role in (INIT, EXECUTE)}


class SchedulerActor(Actor):
    """The Scheduler: one state machine per scenario; dispatches to `init` and `execute`.

    It takes only scenario requests and agents' reports: its own model, which writes the task
    summaries, is an agent loop it owns, not a base class (no `Prompt` or `Dispatch` here).
    """

    def __init__(
        self,
        setup: AgentSetup,
        workspace: Path,
        on_ended: Callable[[ScenarioState], None] | None = None,
        *,
        budgets: Mapping[str, ContextBudget] | None = None,
        on_warning: Callable[[str], None] | None = None,
        check_model: Callable[[str], None] | None = None,
        memory: SchedulerMemory | None = None,
        on_changed: Callable[[ScenarioState], None] | None = None,
        store: ScenarioStore | None = None,
    ) -> None:
        self.setup = setup
        # The runs' ledger, for the caps this Scheduler sets and checks at submit.
        self.spend = setup.spend if isinstance(setup.spend, SpendLedger) else None
        # Long-term memory: each iteration's findings in, recalled entries into every work
        # order (README.md, "Long-term memory"); None: `[memory] enabled = false`.
        self.memory = memory
        # Refuses at submit a scenario no model can answer (offline, with neither a recording
        # nor a script: docs/recordings.md, "Submitting offline"); blocks, run in a thread.
        self.check_model = check_model
        # No parking here: while a summary waited for the model, the Scheduler could answer
        # nobody (not even `status`); an unavailable model gets a plain summary instead.
        self.summaries = AgentLoop(dataclasses.replace(setup, model_retry=None), self)
        self.workspace = workspace
        # Called after an ended scenario is persisted: lets a host wait for the end, not poll.
        self.on_ended = on_ended
        # Called after any state is persisted, or its wait for a model changes: lets a host
        # show it at once (README.md, "What `baton run` shows").
        self.on_changed = on_changed
        # Init's and Execute's own budgets: a scenario's overrides are checked against them at
        # submit, so a bad one is refused there rather than by the agent, later, unseen.
        self.budgets = dict(budgets) if budgets is not None else default_budgets()
        self.on_warning = on_warning
        # Its records: the workspace's files unless the host shares them (Redis).
        self.store = store if store is not None else FileScenarioStore(workspace)
        self.artifacts = ArtifactStore(workspace, setup.storage)
        self.work = WorkOrders(
            self,
            self.summaries,
            self.store,
            setup.token_log,
            memory=memory,
            changed=self._changed,
        )
        # Each scenario's record as last saved (or, for a `waiting` note, last shown): what
        # every query reads while a transition works on its own copy (`_draft`).
        self.records: dict[str, ScenarioRecord] = {}
        self._interrupted: set[str] = set()  # active when this Scheduler started
        # One key more than configured: room for the queries' key beside the scenarios', so
        # that `baton status` does not wait for a task summary (docs/handoffs.md, "Delivery
        # and the Scheduler").
        self.actor_max_concurrent_keys = setup.config.max_concurrent_keys + 1

    def actor_key(self, message: object) -> Hashable | None:
        """The scenario the message is about; None, the queries' key, for a query."""
        if isinstance(message, ScenarioQuery | DamagedQuery):
            return None
        scenario = getattr(message, "scenario", None)
        return scenario if isinstance(scenario, str) else None

    async def on_start(self) -> None:
        # A task summary a crash interrupted is finished when the request that asked for it
        # is delivered again (its round is keyed by the work order): nothing to resume here.
        await self.summaries.start()
        self.records = await self.store.load_all()
        self._interrupted = {name for name, record in self.records.items() if record.active}
        for error in self.store.damaged.values():
            if self.on_warning is not None:
                self.on_warning(str(error))
        for record in self.records.values():
            if record.active:
                self._set_cap(record)
            if record.active and record.outbox is not None and record.pending is None:
                # Saved but perhaps never sent before a crash: send again; the agent runs a
                # work order once, however often it arrives.
                target = _WAITING_ON.get(record.phase)
                if target is not None:
                    await self.actor_ref.peer(target).tell(record.outbox, sender=self.actor_name)

    async def on_stop(self) -> None:
        await self.summaries.stop()

    def context_fill(self) -> dict[str, int]:
        """The size of the task-summary conversation worked on last."""
        return self.summaries.context_fill()

    # --- requests from people (CLI, API) ------------------------------------------------------

    @handler
    async def start(self, message: StartScenario) -> ScenarioState:
        """Start a scenario, or report it if it is already active (nothing starts twice)."""
        existing = self.records.get(message.scenario)
        if existing is not None and existing.active:
            return self._state(existing)
        if message.continue_interrupted and message.scenario in self._interrupted:
            # Its interrupted run ended from the messages it left, before this request was
            # taken: that run was the one asked for.
            self._interrupted.discard(message.scenario)
            if existing is not None:
                return self._state(existing)
        if existing is not None and existing.resume_phase is not None:
            config = await self._scenario_config(message)
            return await self._resume(self._draft(existing), config)
        damage = await self.store.damage(message.scenario)
        if damage is not None:
            raise damage
        config = await self._scenario_config(message)
        if self.spend is not None:
            self.spend.check_scenario_counted(config, message.scenario)
        if self.check_model is not None:
            await anyio.to_thread.run_sync(self.check_model, message.scenario)
        storage = remote_store(self.setup.storage)
        if storage is not None:
            # The run's inputs, as they are now, for the processes that read them from the
            # store; refused here, the submit starts nothing (docs/storage.md, "Scenario
            # inputs").
            await upload_inputs(storage, self.workspace, message.scenario)
        if message.auto_approve is not None:
            config = config.model_copy(update={"auto_approve": message.auto_approve})
        if existing is not None:
            # The previous run's files move to runs/<run>/ before this run's record is saved:
            # killed in between, the next submit finishes the move (docs/handoffs.md,
            # "Earlier runs").
            kept = await self._archive(existing)
            if kept is not None:
                log.info("scheduler.run_archived", scenario=existing.scenario, folder=str(kept))
        record = ScenarioRecord(
            scenario=message.scenario,
            requirement=message.requirement or config.requirement,
            run=existing.run + 1 if existing is not None else 1,
            config=config,
        )
        record.note("submitted", requirement=record.requirement)
        self._set_cap(record)
        await self.work.dispatch(
            record, INIT, None, "a new scenario: design it from the requirement"
        )
        # Known only once its first work order is saved: a submit refused on the way leaves
        # no record behind.
        self.records[record.scenario] = record
        return self._state(record, started=True)

    async def _archive(self, record: ScenarioRecord) -> Path | str | None:
        """Move the previous run's outputs aside, in the workspace or in the bucket
        (docs/handoffs.md, "Earlier runs"): where they went, or None."""
        storage = self.artifacts.storage
        if storage is not None:
            folder_key = f"{SCENARIOS_DIR}/{record.scenario}"
            return await archive_stored_run(storage, folder_key, record.run)
        folder = scenario_dir(self.workspace, record.scenario)
        return await anyio.to_thread.run_sync(archive_run, folder, record.run)

    @handler
    async def approve(self, message: Approve) -> ScenarioState | ScenarioRefused:
        """Let the pending Init → Execute handoff through (docs/handoffs.md, "Approval")."""
        record = await self._awaiting(message.scenario)
        if isinstance(record, ScenarioRefused):
            return record
        assert record.pending is not None
        pending, record.pending = record.pending, None
        record.note("approved", handoff_id=pending.handoff_id)
        await self._to_execute(record, pending.package, "the design was approved: execute it")
        return record.state()

    @handler
    async def reject(self, message: Reject) -> ScenarioState | ScenarioRefused:
        """Send the design back to Init with the reviewer's reason (docs/handoffs.md,
        "Approval")."""
        record = await self._awaiting(message.scenario)
        if isinstance(record, ScenarioRefused):
            return record
        record.pending = None
        record.reason = message.reason
        record.note("rejected", reason=message.reason)
        record.phase = "designing"
        await self._dispatch(
            record,
            INIT,
            None,
            f"the reviewer rejected the design: {message.reason}",
            metadata={"rejection_reason": message.reason},
        )
        return record.state()

    @handler
    async def query(self, message: ScenarioQuery) -> ScenarioState | list[ScenarioState] | None:
        """One scenario's state (None when there is no such scenario: an answer, not a
        refusal), or every scenario's when none is named."""
        if message.scenario is None:
            return [self._state(record) for record in self.records.values()]
        record = await self._known(message.scenario)
        return None if record is None else self._state(record)

    @handler
    async def damaged(self, message: DamagedQuery) -> list[DamagedScenario]:
        """The scenarios whose records did not read back at start and are still there, by
        name (what `baton status` lists with the fix)."""
        errors = [await self.store.damage(name) for name in sorted(self.store.damaged)]
        return [DamagedScenario.of(error) for error in errors if error is not None]

    # --- handoffs from agents -------------------------------------------------------------------

    @handler
    async def delivered(self, message: HandoffDelivered) -> None:
        """Apply an agent's handoff once (a re-sent one, after a crash, is recognised)."""
        record = self.records.get(message.scenario)
        if record is None:
            raise UsageError(f"handoff for unknown scenario {message.scenario!r}")
        if message.conversation not in (None, record.conversation) or not record.active:
            # A handoff from an earlier run (or after the end), re-sent by a crash: not ours.
            log.info("scheduler.stale_handoff", handoff_id=message.handoff_id)
            return
        if message.handoff_id in record.applied_handoffs:
            self._dropped_duplicate(record, message)
            return
        record = self._draft(record)
        record.applied_handoffs.append(message.handoff_id)
        record.nudges = 0
        record.waiting = None
        package = message.package
        self.work.emit_handoff(
            "handoff.received",
            package,
            source=message.source,
            target=self.actor_name,
            record=record,
        )
        if isinstance(package, InitToExecuteContext):
            await self._on_design(record, message.handoff_id, package)
        elif isinstance(package, ExecuteToInitContext | ScenarioCompletion):
            await self._on_iteration(record, package, package.execution_output_dir)

    @handler
    async def round_ended(self, message: RoundEnded) -> None:
        """An agent stopped without handing off: remind it, and after `MAX_NUDGES` reminders
        fail the scenario with its last words, rather than wait for ever."""
        record = self.records.get(message.scenario)
        latest = record.outbox.dispatch_id if record is not None and record.outbox else None
        if (
            record is None
            or message.conversation != record.conversation
            or _WAITING_ON.get(record.phase) != message.source
            or (message.dispatch_id is not None and message.dispatch_id != latest)
        ):
            log.info("scheduler.stale_round_end", source=message.source, scenario=message.scenario)
            return
        record = self._draft(record)
        record.waiting = None
        last_words = " ".join(message.text.split())[:300] or "(no text)"
        if record.nudges >= MAX_NUDGES:
            reason = (
                f"{message.source} ended {record.nudges + 1} rounds without a handoff; "
                f"it last said: {last_words}"
            )
            await self._finish(record, "failed", reason)
            return
        record.nudges += 1
        record.note("nudged", agent=message.source, text=last_words)
        why = (
            f"your last round ended without a handoff, so the scenario is waiting on you: "
            f"finish the task and call {_HANDOFF_TOOL_HINT[message.source]}"
        )
        # No package: the agent's conversation (and its key-fact ledger) already holds it.
        shown = (
            f"{message.source}'s round ended without a handoff; it was asked to finish "
            f"(reminder {record.nudges} of {MAX_NUDGES})"
        )
        await self._dispatch(record, message.source, None, why, shown=shown)

    @handler
    async def round_waiting(self, message: RoundWaiting) -> None:
        """An agent's model is unavailable and its round parked: the scenario's state says so
        (`waiting: ...`, phase unchanged) until the agent reports the wait over."""
        record = self._waiting_on(message.scenario, message.conversation, message.source)
        latest = record.outbox.dispatch_id if record is not None and record.outbox else None
        if record is None or message.dispatch_id not in (None, latest):
            return
        if message.reason is None:
            record.waiting = None
            self._changed(record)
            return
        # The baton process's local time: what the person reading `baton status` sees.
        at = message.retry_at.astimezone().strftime("%H:%M:%S") if message.retry_at else "soon"
        record.waiting = f"waiting: {message.source}: {message.reason}, retrying at {at}"
        log.info("scheduler.scenario_waiting", scenario=record.scenario, waiting=record.waiting)
        self._changed(record)

    @handler
    async def work_refused(self, message: WorkRefused) -> None:
        """An agent refused the latest work order as invalid: no round will answer it, so the
        scenario ends `failed` with the reason rather than wait for ever."""
        record = self._waiting_on(message.scenario, message.conversation, message.source)
        latest = record.outbox.dispatch_id if record is not None and record.outbox else None
        if record is None or message.dispatch_id != latest:
            log.info("scheduler.stale_refusal", source=message.source, scenario=message.scenario)
            return
        reason = f"{message.source} refused work order {message.dispatch_id}: {message.reason}"
        await self._finish(record, "failed", reason)

    def _changed(self, record: ScenarioRecord) -> None:
        """The record was saved (or its `waiting` note changed): publish it to the queries,
        and tell the host."""
        self.records[record.scenario] = record
        if self.on_changed is not None:
            self.on_changed(self._state(record))

    def _waiting_on(self, scenario: str, conversation: str, source: str) -> ScenarioRecord | None:
        """A draft of the scenario's record if this run of it is waiting on `source`, else
        None."""
        record = self.records.get(scenario)
        if (
            record is None
            or conversation != record.conversation
            or _WAITING_ON.get(record.phase) != source
        ):
            return None
        return self._draft(record)

    @staticmethod
    def _draft(record: ScenarioRecord) -> ScenarioRecord:
        """A copy of a scenario's record for a transition to change; published (`_changed`)
        once saved, so a query never shows a state a crash would undo, and a handler that
        fails leaves the last saved one."""
        return record.model_copy(deep=True)

    def _dropped_duplicate(self, record: ScenarioRecord, message: HandoffDelivered) -> None:
        """A handoff id applied before is dropped. Normally the scenario has moved on (a crash
        re-sent it); if it still waits on that agent for the same work order, the agent's ids
        repeat and nothing else will come: say so where people look, with what to do."""
        latest = record.outbox.dispatch_id if record.outbox else None
        if _WAITING_ON.get(record.phase) != message.source or message.dispatch_id not in (
            None,
            latest,
        ):
            log.info("scheduler.duplicate_handoff", handoff_id=message.handoff_id)
            return
        record = self._draft(record)
        record.waiting = (
            f"waiting: {message.source} handed off {message.handoff_id!r} again, which was "
            f"applied before, so it was dropped and nothing moves; if {message.source}'s "
            f"journal was lost, stop baton, move {self.store.path(record.scenario)} aside and "
            f"submit {record.scenario!r} again"
        )
        log.warning(
            "scheduler.duplicate_handoff_while_waiting",
            scenario=record.scenario,
            handoff_id=message.handoff_id,
            waiting_on=message.source,
            hint=record.waiting,
        )
        self.records[record.scenario] = record  # a note for people, not a transition: unsaved

    async def _on_design(
        self, record: ScenarioRecord, handoff_id: str, package: InitToExecuteContext
    ) -> None:
        record.findings = self._merged(record, {"design": package.design_artifacts}, INIT)
        if package.design_rationale:
            record.findings = self._merged(
                record, {"design_rationale": package.design_rationale}, INIT
            )
        record.note("design_handed_off", artifacts=sorted(package.design_artifacts.values()))
        if record.config.auto_approve:
            await self._to_execute(
                record, package, "the design is ready (auto-approved): execute it"
            )
            return
        record.phase = "awaiting_approval"
        record.pending = PendingHandoff(handoff_id=handoff_id, package=package)
        await self.store.save(record)
        self._changed(record)
        log.info("scheduler.awaiting_approval", scenario=record.scenario)

    async def _on_iteration(
        self, record: ScenarioRecord, package: HandoffPackage, output_dir: str
    ) -> None:
        record.iteration = max(record.iteration, iteration_of(output_dir))
        summary, report, report_path = await read_iteration(self.artifacts, package, output_dir)
        record.last_report = report_path
        decision = decide(
            record.config.policy, iteration=record.iteration, summary=summary, report=report
        )
        record.note(
            "iteration_done",
            iteration=record.iteration,
            success_rate=decision.success_rate,
            critical_share=decision.critical_share,
            verdict=decision.verdict,
        )
        emit_iteration_ended(
            self.setup.token_log, record, package, decision, summary=summary, report=report
        )
        # Written before the merge (it reads the previous iteration's findings); stored after
        # an end is saved, so the end is not held up, and before a dispatch, which recalls it.
        finding = iteration_finding(record, package, decision, summary, report)
        record.findings = self._merged(record, iteration_findings(package, decision), EXECUTE)
        if decision.verdict == "complete":
            await self._finish(record, "completed", decision.reason)
            await self._remember(record, finding, decision)
        elif decision.verdict == "fail":
            await self._finish(record, "failed", f"{decision.reason}; last report: {report_path}")
            await self._remember(record, finding, decision)
        elif decision.verdict == "return_to_init" or isinstance(package, ExecuteToInitContext):
            record.phase = "returned_to_init"
            await self._remember(record, finding, decision)
            await self._dispatch(record, INIT, package, decision.reason)
        else:
            await self._remember(record, finding, decision)
            await self._dispatch(record, EXECUTE, record.last_package, decision.reason)

    async def _remember(self, record: ScenarioRecord, finding: str, decision: Decision) -> None:
        if self.memory is not None:
            await self.memory.record_finding(record, finding, decision)

    async def _to_execute(self, record: ScenarioRecord, package: HandoffPackage, why: str) -> None:
        record.phase = "executing"
        record.last_package = package
        await self._dispatch(record, EXECUTE, package, why)

    async def _dispatch(
        self,
        record: ScenarioRecord,
        agent: str,
        package: HandoffPackage | None,
        why: str,
        *,
        metadata: dict[str, Any] | None = None,
        shown: str | None = None,
    ) -> None:
        try:
            await self.work.dispatch(record, agent, package, why, metadata=metadata, shown=shown)
        except RecordingDivergedError as error:
            # A replayed task summary the recording lacks: the scenario ends saying so, rather
            # than wait on a work order never sent (docs/recordings.md, "Divergence").
            await self._finish(record, "failed", str(error))

    async def _finish(self, record: ScenarioRecord, phase: Any, reason: str) -> None:
        record.phase = phase
        record.reason = reason
        record.pending = None
        record.waiting = None
        record.note(phase, reason=reason)
        await self.store.save(record)
        emit_scenario_ended(self.setup.token_log, record)
        self._changed(record)
        log.info("scheduler.scenario_ended", scenario=record.scenario, phase=phase, reason=reason)
        if self.on_ended is not None:
            self.on_ended(self._state(record))

    @handler
    async def spend_cap_reached(self, message: SpendCapReached) -> None:
        """An agent's round stopped at the run's spend cap: the scenario stops (`stopped`,
        `budget: ...`) with the phase it was in kept, so that `baton submit` with a higher
        cap sends the same work order again and the open round finishes."""
        record = self._waiting_on(message.scenario, message.conversation, message.source)
        latest = record.outbox.dispatch_id if record is not None and record.outbox else None
        if record is None or message.dispatch_id not in (None, latest):
            log.info("scheduler.stale_cap_report", source=message.source, scenario=message.scenario)
            return
        cap = self._cap_of(record.config)
        if cap is None or message.cap < cap:
            # Reached under a cap raised since (a round resumed at start, before the
            # submit that raised it was taken): the work order sent with the new cap runs.
            log.info("scheduler.stale_cap_report", source=message.source, scenario=message.scenario)
            return
        record.resume_phase = record.phase
        reason = str(SpendCapReachedFailure(record.scenario, message.spent, message.cap))
        await self._finish(record, "stopped", reason)

    async def _resume(self, record: ScenarioRecord, config: ScenarioConfig) -> ScenarioState:
        """Continue a run its spend cap stopped, under the cap its files now give; a cap
        still spent is refused (`ConfigError`: the caller's answer, nothing changes)."""
        cap = self._cap_of(config)
        if self.spend is not None:
            self.spend.check_covers(record.conversation, cap)
            self.spend.check_scenario_counted(config, record.scenario)
        assert record.resume_phase is not None
        record.config = config.model_copy(update={"auto_approve": record.config.auto_approve})
        record.phase, record.resume_phase, record.reason = record.resume_phase, None, None
        record.note("resumed", max_cost_usd=cap)
        self._set_cap(record)
        await self.store.save(record)
        self._changed(record)
        target = _WAITING_ON.get(record.phase)
        if record.outbox is not None and target is not None:
            # The work order its round was opened by: the agent finishes that open round.
            await self.actor_ref.peer(target).tell(record.outbox, sender=self.actor_name)
        log.info("scheduler.scenario_resumed", scenario=record.scenario, phase=record.phase)
        return self._state(record, started=True)

    # --- helpers ------------------------------------------------------------------------------

    def _cap_of(self, config: ScenarioConfig) -> float | None:
        spend = self.spend
        return spend.cap_of(config) if spend is not None else None

    def _set_cap(self, record: ScenarioRecord) -> None:
        if self.spend is not None:
            self.spend.set_cap(record.conversation, self._cap_of(record.config))

    def _state(self, record: ScenarioRecord, *, started: bool = False) -> ScenarioState:
        """The record's public view, with what its run has spent and its cap."""
        state = record.state(started=started)
        spend = self.spend
        if spend is None:
            return state
        return state.model_copy(
            update={
                "cost_usd": spend.spend(record.conversation).usd,
                "max_cost_usd": self._cap_of(record.config),
            }
        )

    async def _known(self, scenario: str) -> ScenarioRecord | None:
        """The scenario's record, or None for a scenario never submitted; one whose record
        did not read back raises the error naming the file (`DamagedScenarioError`), since
        "submit it first" would send its user the wrong way."""
        record = self.records.get(scenario)
        if record is None:
            damage = await self.store.damage(scenario)
            if damage is not None:
                raise damage
        return record

    async def _awaiting(self, scenario: str) -> ScenarioRecord | ScenarioRefused:
        # Answered, not raised: a refused decision is the caller's news, not a dead letter
        # (a damaged record, raised by `_known`, is the caller's news too: asked, it is
        # refused, not dead-lettered).
        record = await self._known(scenario)
        if record is None:
            return ScenarioRefused(
                scenario=scenario, reason=f"no scenario {scenario!r}; submit it first"
            )
        if record.phase != "awaiting_approval" or record.pending is None:
            return ScenarioRefused(
                scenario=scenario,
                phase=record.phase,
                reason=f"scenario {scenario!r} has no handoff awaiting approval "
                f"(it is {record.phase})",
            )
        return self._draft(record)

    async def _scenario_config(self, message: StartScenario) -> ScenarioConfig:
        """The scenario's checked `scenario.toml`; without one, defaults and the requirement
        given (a file that is there but wrong is refused, never passed over)."""
        return await anyio.to_thread.run_sync(self._read_config, message)

    def _read_config(self, message: StartScenario) -> ScenarioConfig:
        # Blocking (stat, scenario.toml, its prompts): a worker thread's, never the loop's.
        folder = scenario_dir(self.workspace, message.scenario)
        if message.requirement is not None and not (folder / SCENARIO_FILE).exists():
            return ScenarioConfig(name=message.scenario, requirement=message.requirement)
        return load_scenario(self.workspace, message.scenario, self.budgets)

    @staticmethod
    def _merged(record: ScenarioRecord, findings: dict[str, Any], source: str) -> dict[str, Any]:
        context = AgentContext(task_summary="-", shared_findings=record.findings)
        return dict(context.merge_findings(findings, source=source).shared_findings)
