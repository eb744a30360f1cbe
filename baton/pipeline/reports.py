"""`SchedulerReports`: how Init's and Execute's scenario rounds report to the Scheduler.

An agent knows no Scheduler: its rounds report through the `RoundReports` its setup holds
(docs/architecture.md, "agents/"). The pipeline's are these messages to the `scheduler`
actor: the package a handoff tool delivered (`HandoffDelivered`), a round that ended without
one (`RoundEnded`), a round waiting for its model (`RoundWaiting`), one that cannot go on
(`WorkRefused`) or stopped at its run's spend cap (`SpendCapReached`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from baton.agents.agent_setup import Handoff, RoundOf
from baton.agents.errors import SpendCapReachedFailure
from baton.context.ledger import KeyFact
from baton.errors import BatonError
from baton.pipeline.ledger_facts import package_facts
from baton.pipeline.messages import (
    HandoffDelivered,
    RoundEnded,
    RoundWaiting,
    SpendCapReached,
    WorkRefused,
)
from baton.pipeline.packages import HandoffPackage, parse_package
from baton.pipeline.scenario_state import SCHEDULER
from baton.runtime.ref import ActorRef


def _package(package: Handoff) -> HandoffPackage:
    # As it travels: validated again by its version's rules (docs/handoffs.md).
    return parse_package(package.model_dump(mode="json"))


@dataclass(frozen=True, slots=True)
class SchedulerReports:
    """`RoundReports` as messages to the Scheduler (`target`)."""

    target: str = SCHEDULER

    async def handed_off(
        self, sender: ActorRef, round_: RoundOf, handoff_id: str, package: Handoff
    ) -> None:
        """`HandoffDelivered` with the package, told from the agent."""
        delivered = HandoffDelivered(
            scenario=round_.scenario,
            conversation=round_.conversation,
            source=round_.agent,
            handoff_id=handoff_id,
            package=_package(package),
            dispatch_id=round_.dispatch_id,
        )
        await sender.peer(self.target).tell(delivered, sender=round_.agent)

    async def ended(self, sender: ActorRef, round_: RoundOf, text: str) -> None:
        """`RoundEnded`: the Scheduler nudges the agent or fails the scenario."""
        ended = RoundEnded(
            scenario=round_.scenario,
            conversation=round_.conversation,
            source=round_.agent,
            text=text,
            dispatch_id=round_.dispatch_id,
        )
        await sender.peer(self.target).tell(ended, sender=round_.agent)

    async def waiting(
        self, sender: ActorRef, round_: RoundOf, reason: str | None, retry_at: datetime | None
    ) -> None:
        """`RoundWaiting`: `status` shows the wait on the scenario."""
        waiting = RoundWaiting(
            scenario=round_.scenario,
            conversation=round_.conversation,
            source=round_.agent,
            reason=reason,
            retry_at=retry_at,
            dispatch_id=round_.dispatch_id,
        )
        await sender.peer(self.target).tell(waiting, sender=round_.agent)

    async def refused(self, sender: ActorRef, round_: RoundOf, error: BatonError) -> None:
        """`WorkRefused`: the Scheduler ends the scenario with the reason."""
        assert round_.dispatch_id is not None, "only an assigned round is refused"
        refused = WorkRefused(
            scenario=round_.scenario,
            conversation=round_.conversation,
            source=round_.agent,
            dispatch_id=round_.dispatch_id,
            reason=f"{type(error).__name__}: {error}",
        )
        await sender.peer(self.target).tell(refused, sender=round_.agent)

    async def spend_cap_reached(
        self, sender: ActorRef, round_: RoundOf, reached: SpendCapReachedFailure
    ) -> None:
        """`SpendCapReached`: the Scheduler stops the scenario until its cap is raised."""
        report = SpendCapReached(
            scenario=reached.scenario,
            conversation=round_.conversation,
            source=round_.agent,
            spent=reached.spent,
            cap=reached.cap,
            dispatch_id=round_.dispatch_id,
        )
        await sender.peer(self.target).tell(report, sender=round_.agent)

    def facts(self, package: Handoff) -> list[KeyFact]:
        """The package's paths and the ids its fields name (`package_facts`)."""
        return package_facts(_package(package), source=package.handoff_type)
