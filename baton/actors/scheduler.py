"""`SchedulerActor`: moves each scenario between Init and Execute, under human approval and the
iteration policy (docs/handoffs.md, "Delivery and the Scheduler").

Per scenario: designing → awaiting_approval → executing → returned_to_init → designing … →
completed | failed | stopped, persisted after every transition. Before each dispatch the
Scheduler's own model writes the task summary the agent reads first; those calls run in the
scenario's conversation of the Scheduler, so its context has a budget and compacts too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import structlog

from baton.actors.agent_loop import AgentLoop
from baton.actors.agent_setup import AgentSetup
from baton.actors.artifacts import ArtifactStore, FailureSummary, Layer1ProblemsReport
from baton.actors.messages import (
    Approve,
    Dispatch,
    HandoffDelivered,
    Reject,
    RoundEnded,
    ScenarioQuery,
    ScenarioState,
    StartScenario,
)
from baton.actors.roles import EXECUTE, INIT
from baton.actors.scenario import (
    PendingHandoff,
    ScenarioConfig,
    ScenarioRecord,
    ScenarioStore,
    load_scenario,
)
from baton.actors.scheduling_policy import Decision, decide
from baton.context.agent_context import AgentContext
from baton.context.packages import (
    ExecuteToInitContext,
    HandoffPackage,
    InitToExecuteContext,
    ScenarioCompletion,
)
from baton.context.tokens import estimate_json_tokens
from baton.errors import BatonError, UsageError
from baton.runtime.actor import Actor, handler

log = structlog.get_logger(__name__)

_ITERATION = re.compile(r"iteration_(\d+)")

MAX_NUDGES = 2
"""Rounds an agent may end without a handoff, each answered by a reminder, before failing."""

_WAITING_ON = {"designing": INIT, "returned_to_init": INIT, "executing": EXECUTE}
_HANDOFF_TOOL_HINT = {
    INIT: "handoff_to_execute",
    EXECUTE: "return_to_init (the design must change) or complete_scenario (criteria met)",
}


def iteration_of(execution_output_dir: str) -> int:
    """The N of `.../iteration_N` (0 when the path names none)."""
    found = _ITERATION.search(execution_output_dir)
    return int(found.group(1)) if found else 0


def _join(directory: str, relative: str) -> str:
    return str(PurePosixPath(directory) / relative)


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
    ) -> None:
        self.setup = setup
        self.summaries = AgentLoop(setup, self)
        self.workspace = workspace
        # Called after an ended scenario is persisted: lets a host wait for the end, not poll.
        self.on_ended = on_ended
        self.store = ScenarioStore(workspace)
        self.artifacts = ArtifactStore(workspace)
        self.records: dict[str, ScenarioRecord] = {}

    async def on_start(self) -> None:
        # A task summary a crash interrupted is finished when the request that asked for it
        # is delivered again (its round is keyed by the work order): nothing to resume here.
        await self.summaries.start()
        self.records = await self.store.load_all()
        for record in self.records.values():
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
            return existing.state()
        config = await self._scenario_config(message)
        if message.auto_approve is not None:
            config = config.model_copy(update={"auto_approve": message.auto_approve})
        record = ScenarioRecord(
            scenario=message.scenario,
            requirement=message.requirement or config.requirement,
            run=existing.run + 1 if existing is not None else 1,
            config=config,
        )
        record.note("submitted", requirement=record.requirement)
        self.records[record.scenario] = record
        await self._dispatch(record, INIT, None, "a new scenario: design it from the requirement")
        return record.state(started=True)

    @handler
    async def approve(self, message: Approve) -> ScenarioState:
        """Let the pending Init → Execute handoff through (docs/handoffs.md, "Approval")."""
        record = self._awaiting(message.scenario)
        assert record.pending is not None
        pending, record.pending = record.pending, None
        record.note("approved", handoff_id=pending.handoff_id)
        await self._to_execute(record, pending.package, "the design was approved: execute it")
        return record.state()

    @handler
    async def reject(self, message: Reject) -> ScenarioState:
        """Send the design back to Init with the reviewer's reason (docs/handoffs.md,
        "Approval")."""
        record = self._awaiting(message.scenario)
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
    async def query(self, message: ScenarioQuery) -> ScenarioState | list[ScenarioState]:
        """One scenario's state, or every scenario's when none is named."""
        if message.scenario is None:
            return [record.state() for record in self.records.values()]
        record = self.records.get(message.scenario)
        if record is None:
            raise UsageError(f"no scenario {message.scenario!r}; submit it first")
        return record.state()

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
            log.info("scheduler.duplicate_handoff", handoff_id=message.handoff_id)
            return
        record.applied_handoffs.append(message.handoff_id)
        record.nudges = 0
        package = message.package
        self._emit_handoff(
            "handoff.received", package, source=message.source, target=self.actor_name
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
        await self._dispatch(record, message.source, None, why)

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
        log.info("scheduler.awaiting_approval", scenario=record.scenario)

    async def _on_iteration(
        self, record: ScenarioRecord, package: HandoffPackage, output_dir: str
    ) -> None:
        record.iteration = max(record.iteration, iteration_of(output_dir))
        summary, report, report_path = await self._iteration_reports(package, output_dir)
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
        record.findings = self._merged(record, self._iteration_findings(package, decision), EXECUTE)
        if decision.verdict == "complete":
            await self._finish(record, "completed", decision.reason)
        elif decision.verdict == "fail":
            await self._finish(record, "failed", f"{decision.reason}; last report: {report_path}")
        elif decision.verdict == "return_to_init" or isinstance(package, ExecuteToInitContext):
            record.phase = "returned_to_init"
            await self._dispatch(record, INIT, package, decision.reason)
        else:
            await self._dispatch(record, EXECUTE, record.last_package, decision.reason)

    async def _iteration_reports(
        self, package: HandoffPackage, output_dir: str
    ) -> tuple[FailureSummary | None, Layer1ProblemsReport | None, str | None]:
        report_rel = None
        if isinstance(package, ExecuteToInitContext):
            report_rel = package.layer1_problems_report_path
        elif isinstance(package, ScenarioCompletion):
            report_rel = package.report_paths.get("layer1_problems_report")
        report_path: str | None = _join(output_dir, report_rel or "layer1_problems_report.json")
        summary_path = _join(output_dir, "failure_summary.json")
        summary = report = None
        try:
            summary = await self.artifacts.read_failure_summary(summary_path)
        except (BatonError, OSError) as exc:
            log.warning("scheduler.no_failure_summary", path=summary_path, error=str(exc))
        try:
            report = await self.artifacts.read_report(str(report_path))
        except (BatonError, OSError) as exc:
            log.warning("scheduler.no_report", path=report_path, error=str(exc))
            report_path = None
        return summary, report, report_path

    @staticmethod
    def _iteration_findings(package: HandoffPackage, decision: Decision) -> dict[str, Any]:
        findings: dict[str, Any] = {
            "success_rate": decision.success_rate,
            "critical_share": decision.critical_share,
            "verdict": decision.reason,
        }
        if isinstance(package, ExecuteToInitContext):
            findings["trigger_reason"] = package.trigger_reason
            findings["modification_suggestions"] = package.modification_suggestions_summary
            findings["failed_samples"] = [s.get("sample_id") for s in package.failure_samples_index]
        return {"last_iteration": findings}

    # --- moving work ------------------------------------------------------------------------------

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
    ) -> None:
        record.reason = why
        dispatch_id = record.next_dispatch_id()
        context = AgentContext(
            task_summary=await self._task_summary(record, agent, package, why, dispatch_id),
            relevant_history=list(record.history[-10:]),
            shared_findings=dict(record.findings),
            metadata={
                "scenario": record.scenario,
                "requirement": record.requirement,
                "phase": record.phase,
                "iteration": record.iteration,
                "dispatched_by": self.actor_name,
                **(metadata or {}),
            },
        )
        record.note("dispatched", to=agent, why=why)
        order = Dispatch(
            scenario=record.scenario,
            agent_context=context,
            package=package,
            budget=record.config.actors.get(agent),
            conversation=record.conversation,
            dispatch_id=dispatch_id,
        )
        record.dispatches += 1
        record.outbox = order
        # Saved before it is sent: a crash in between leaves it in the outbox for `on_start`.
        await self.store.save(record)
        await self.actor_ref.peer(agent).tell(order, sender=self.actor_name)
        if package is not None:
            self._emit_handoff("handoff.sent", package, source=self.actor_name, target=agent)

    async def _task_summary(
        self,
        record: ScenarioRecord,
        agent: str,
        package: HandoffPackage | None,
        why: str,
        dispatch_id: str,
    ) -> str:
        lines = [
            f"Write the task summary for the {agent} agent.",
            f"Scenario: {record.scenario}. Requirement: {record.requirement}.",
            f"Reason for this dispatch: {why}.",
            f"Iteration so far: {record.iteration}.",
        ]
        if package is not None:
            lines.append(f"Package ({package.handoff_type}): {package.model_dump_json()}")
        if record.findings:
            lines.append(f"Findings so far: {record.findings}")
        # Keyed by the work order: re-run after a crash, it reuses the summary already paid for.
        return await self.summaries.run_round(
            record.conversation, "\n".join(lines), key=f"task-summary:{dispatch_id}"
        )

    async def _finish(self, record: ScenarioRecord, phase: Any, reason: str) -> None:
        record.phase = phase
        record.reason = reason
        record.pending = None
        record.note(phase, reason=reason)
        await self.store.save(record)
        log.info("scheduler.scenario_ended", scenario=record.scenario, phase=phase, reason=reason)
        if self.on_ended is not None:
            self.on_ended(record.state())

    # --- helpers ------------------------------------------------------------------------------

    def _awaiting(self, scenario: str) -> ScenarioRecord:
        record = self.records.get(scenario)
        if record is None:
            raise UsageError(f"no scenario {scenario!r}; submit it first")
        if record.phase != "awaiting_approval" or record.pending is None:
            raise UsageError(
                f"scenario {scenario!r} has no handoff awaiting approval (it is {record.phase})"
            )
        return record

    async def _scenario_config(self, message: StartScenario) -> ScenarioConfig:
        try:
            return load_scenario(self.workspace, message.scenario)
        except UsageError:
            if message.requirement is None:
                raise
            return ScenarioConfig(name=message.scenario, requirement=message.requirement)

    @staticmethod
    def _merged(record: ScenarioRecord, findings: dict[str, Any], source: str) -> dict[str, Any]:
        context = AgentContext(task_summary="-", shared_findings=record.findings)
        return dict(context.merge_findings(findings, source=source).shared_findings)

    def _emit_handoff(
        self, event: str, package: HandoffPackage, *, source: str, target: str
    ) -> None:
        self.setup.token_log.emit(
            event,
            handoff_type=package.handoff_type,
            **{"from": source},
            to=target,
            package_tokens=estimate_json_tokens(package.model_dump(mode="json")),
        )
