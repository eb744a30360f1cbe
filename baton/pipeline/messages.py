"""Messages the built-in actors accept (docs/architecture.md, "pipeline/"); each is a pydantic
model.

`Prompt` and `Dispatch` go to agent actors; `StartScenario`, `Approve`, `Reject`,
`ScenarioQuery` go to the Scheduler, and so do the agents' reports on their rounds
(`HandoffDelivered`, `RoundEnded`, `RoundWaiting`, `WorkRefused`, `SpendCapReached`). Every
scenario name in them follows one rule (`baton.pipeline.scenario_names`). What the Scheduler
answers about a scenario (`ScenarioState`) is in `baton.pipeline.scenario_state`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from baton.agents.budget_overrides import check_override_keys
from baton.agents.messages import scenario_of
from baton.pipeline.agent_context import AgentContext
from baton.pipeline.packages import HandoffPackage
from baton.pipeline.scenario_names import ScenarioName


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Dispatch(_Message):
    """The Scheduler's work order to an agent: its task context and the package, if any."""

    scenario: ScenarioName
    agent_context: AgentContext
    package: HandoffPackage | None = None
    budget: Annotated[dict[str, Any], AfterValidator(check_override_keys)] | None = Field(
        None,
        description="context budget overrides for this scenario's conversation: budget keys, "
        "each within its own bounds",
    )
    conversation: str | None = Field(
        None,
        description="the agent's conversation for this run of the scenario; default: the scenario",
    )
    dispatch_id: str | None = Field(
        None,
        min_length=1,
        description="names this work order: the same id delivered twice runs one round",
    )

    @model_validator(mode="after")
    def _conversation_is_the_scenarios(self) -> Self:
        if self.conversation is not None and scenario_of(self.conversation) != self.scenario:
            raise ValueError(
                f"conversation {self.conversation!r} is not one of scenario {self.scenario!r}"
            )
        return self

    @property
    def conversation_id(self) -> str:
        return self.conversation or self.scenario


class HandoffDelivered(_Message):
    """An agent's handoff tool delivered a package; `handoff_id` is stable across retries."""

    scenario: ScenarioName
    source: str = Field(min_length=1, description="the actor that handed off")
    conversation: str | None = Field(None, description="the sender's conversation")
    handoff_id: str = Field(min_length=1)
    package: HandoffPackage
    dispatch_id: str | None = Field(None, description="the work order whose round handed off")


class RoundEnded(_Message):
    """An agent ended a scenario round without handing off: the Scheduler must decide."""

    scenario: ScenarioName
    conversation: str = Field(min_length=1)
    source: str = Field(min_length=1, description="the agent whose round ended")
    text: str = Field("", description="the round's final assistant text (cut to 2000 chars)")
    dispatch_id: str | None = Field(None, description="the dispatch whose round this was")


class RoundWaiting(_Message):
    """An agent's model is unavailable (its call failed after the client's own retries): the
    round is parked and tried again at `retry_at`. `reason=None` says the wait is over."""

    scenario: ScenarioName
    conversation: str = Field(min_length=1)
    source: str = Field(min_length=1, description="the agent whose round waits")
    reason: str | None = Field(None, description="why, in a few words (API unreachable, ...)")
    retry_at: datetime | None = Field(None, description="when the call is tried again")
    dispatch_id: str | None = Field(None, description="the work order whose round waits")


class WorkRefused(_Message):
    """An agent refused a work order, or gave up its round (a `UsageError`: the order is
    wrong, or the round cannot go on as configured; a `FileTooLargeFailure`: its journal may
    not grow), so no round will answer it: the Scheduler ends the scenario with the reason
    instead of waiting."""

    scenario: ScenarioName
    conversation: str = Field(min_length=1)
    source: str = Field(min_length=1, description="the agent that refused it")
    dispatch_id: str = Field(min_length=1)
    reason: str = Field(min_length=1)


class SpendCapReached(_Message):
    """An agent did not make a scenario round's next call: the run has spent its cap
    (`max_cost_usd`). The round stays open in the agent's journal; the Scheduler stops the
    scenario until it is submitted again with a higher cap."""

    scenario: ScenarioName
    conversation: str = Field(min_length=1)
    source: str = Field(min_length=1, description="the agent whose round stopped")
    spent: float = Field(ge=0, description="USD the run has spent")
    cap: float = Field(gt=0, description="the run's cap in USD")
    dispatch_id: str | None = Field(None, description="the work order whose round stopped")


class StartScenario(_Message):
    """Submit a scenario to the Scheduler; if it is already active, nothing new starts."""

    scenario: ScenarioName
    requirement: str | None = Field(
        None, min_length=1, description="overrides the scenario's requirement (ScenarioConfig)"
    )
    auto_approve: bool | None = Field(
        None, description="overrides the scenario's auto_approve for this run (the approval gate)"
    )
    continue_interrupted: bool = Field(
        False,
        description="true: a scenario that was active when the Scheduler started (a run a "
        "stop or crash interrupted) is continued, never started again, even once that run "
        "has ended; what `baton run --submit` sends, so repeating the command after a crash "
        "resumes (docs/scenarios.md)",
    )


class Approve(_Message):
    """Approve the scenario's pending Init → Execute handoff (docs/handoffs.md, "Approval")."""

    scenario: ScenarioName


class Reject(_Message):
    """Reject the pending handoff; the reason goes back to Init in its AgentContext."""

    scenario: ScenarioName
    reason: str = Field(min_length=1)


class ScenarioQuery(_Message):
    """Ask the Scheduler for one scenario's state, or all of them when `scenario` is None."""

    scenario: ScenarioName | None = None
