"""How the Scheduler hands work to an agent: a task summary its own model writes, the
`AgentContext`, and the work order saved in the scenario's record before it is sent
(docs/handoffs.md, "Delivery and the Scheduler")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from baton._log import get_logger
from baton.agents.agent_config import TokenSink
from baton.agents.agent_loop import AgentLoop
from baton.context.tokens import estimate_json_tokens
from baton.models.errors import ModelCallFailure
from baton.pipeline.agent_context import AgentContext
from baton.pipeline.messages import Dispatch
from baton.pipeline.packages import HandoffPackage
from baton.pipeline.scenario import ScenarioRecord
from baton.pipeline.scenario_store import ScenarioStore
from baton.pipeline.scheduler_memory import SchedulerMemory
from baton.runtime.actor import Actor

log = get_logger(__name__)


class WorkOrders:
    """Builds, saves and sends the Scheduler's work orders, for the actor `host`."""

    def __init__(
        self,
        host: Actor,
        summaries: AgentLoop,
        store: ScenarioStore,
        token_log: TokenSink,
        *,
        memory: SchedulerMemory | None = None,
        changed: Callable[[ScenarioRecord], None] | None = None,
    ) -> None:
        self._host = host
        self._changed = changed  # told of each record saved here (a new run's first order)
        self._memory = memory
        self._summaries = summaries
        self._store = store
        self._token_log = token_log

    async def dispatch(
        self,
        record: ScenarioRecord,
        agent: str,
        package: HandoffPackage | None,
        why: str,
        *,
        metadata: dict[str, Any] | None = None,
        shown: str | None = None,
    ) -> None:
        """Send `agent` its next round of the scenario, with `package` if any, and why (the
        agent's words); `shown` is what the scenario's state says of it to a person, when
        that is not `why`."""
        host = self._host
        record.reason = shown or why
        dispatch_id = record.next_dispatch_id()
        context = AgentContext(
            task_summary=await self._task_summary(record, agent, package, why, dispatch_id),
            relevant_history=list(record.history[-10:]),
            shared_findings=dict(record.findings),
            recalled_memory=await self._memory.recall(record, agent) if self._memory else "",
            metadata={
                "scenario": record.scenario,
                "requirement": record.requirement,
                "phase": record.phase,
                "iteration": record.iteration,
                "dispatched_by": host.actor_name,
                **(metadata or {}),
            },
        )
        record.note("dispatched", to=agent, why=why)
        record.waiting = None
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
        await self._store.save(record)
        if self._changed is not None:
            self._changed(record)
        await host.actor_ref.peer(agent).tell(order, sender=host.actor_name)
        if package is not None:
            self.emit_handoff(
                "handoff.sent", package, source=host.actor_name, target=agent, record=record
            )

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
        try:
            return await self._summaries.run_round(
                record.conversation, "\n".join(lines), key=f"task-summary:{dispatch_id}"
            )
        except ModelCallFailure as error:
            # The work goes on without the summary model: the agent gets the same facts
            # unsummarised (the context carries the package, history and findings too), and
            # if the API is down for it as well, its round waits and retries there.
            log.warning(
                "scheduler.task_summary_unavailable", scenario=record.scenario, error=str(error)
            )
            return "\n".join([f"(No summary: the model is unavailable: {error})", *lines[1:4]])

    def emit_handoff(
        self,
        event: str,
        package: HandoffPackage,
        *,
        source: str,
        target: str,
        record: ScenarioRecord,
    ) -> None:
        """The `handoff.sent` / `handoff.received` token-log line of `package`, naming the
        scenario run it belongs to (the Scheduler handles no one scenario's round, so no
        context says it: `baton tail --scenario` finds the line by these)."""
        self._token_log.emit(
            event,
            scenario=record.scenario,
            conversation=record.conversation,
            handoff_type=package.handoff_type,
            **{"from": source},
            to=target,
            package_tokens=estimate_json_tokens(package.model_dump(mode="json")),
        )
