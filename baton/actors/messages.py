"""Messages the built-in actors accept (docs/architecture.md, "actors/"); each is a pydantic
model.

`Prompt` and `Dispatch` go to agent actors; `StartScenario`, `Approve`, `Reject`,
`ScenarioQuery` and `HandoffDelivered` go to the Scheduler.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from baton.context.agent_context import AgentContext
from baton.context.packages import HandoffPackage

SCHEDULER = "scheduler"

ScenarioPhase = Literal[
    "designing",
    "awaiting_approval",
    "executing",
    "returned_to_init",
    "completed",
    "failed",
    "stopped",
]
ACTIVE_PHASES: frozenset[str] = frozenset(
    {"designing", "awaiting_approval", "executing", "returned_to_init"}
)


RUN_SEPARATOR = "@"
"""Scenario names never contain it, so `scenario@run` conversation ids are unambiguous."""


def scenario_conversation(scenario: str, run: int) -> str:
    """The conversation id of a scenario's `run`-th submission: fresh history per run."""
    return scenario if run <= 1 else f"{scenario}{RUN_SEPARATOR}{run}"


def scenario_of(conversation: str) -> str:
    """The scenario a conversation id belongs to."""
    return conversation.partition(RUN_SEPARATOR)[0]


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Prompt(_Message):
    """Start a round with this text; asked, the reply is the final assistant text."""

    text: str = Field(min_length=1)


class Dispatch(_Message):
    """The Scheduler's work order to an agent: its task context and the package, if any."""

    scenario: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    agent_context: AgentContext
    package: HandoffPackage | None = None
    budget: dict[str, Any] | None = Field(
        None, description="context budget overrides for this scenario's conversation"
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

    scenario: str = Field(min_length=1)
    source: str = Field(min_length=1, description="the actor that handed off")
    conversation: str | None = Field(None, description="the sender's conversation")
    handoff_id: str = Field(min_length=1)
    package: HandoffPackage


class RoundEnded(_Message):
    """An agent ended a scenario round without handing off: the Scheduler must decide."""

    scenario: str = Field(min_length=1)
    conversation: str = Field(min_length=1)
    source: str = Field(min_length=1, description="the agent whose round ended")
    text: str = Field("", description="the round's final assistant text (cut to 2000 chars)")
    dispatch_id: str | None = Field(None, description="the dispatch whose round this was")


class StartScenario(_Message):
    """Submit a scenario to the Scheduler; if it is already active, nothing new starts."""

    scenario: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    requirement: str | None = None
    auto_approve: bool | None = Field(
        None, description="overrides the scenario's auto_approve for this run (HITL-1)"
    )


class Approve(_Message):
    """Approve the scenario's pending Init → Execute handoff (docs/handoffs.md, "Approval")."""

    scenario: str = Field(min_length=1)


class Reject(_Message):
    """Reject the pending handoff; the reason goes back to Init in its AgentContext."""

    scenario: str = Field(min_length=1)
    reason: str = Field(min_length=1)


class ScenarioQuery(_Message):
    """Ask the Scheduler for one scenario's state, or all of them when `scenario` is None."""

    scenario: str | None = None


class ScenarioState(BaseModel):
    """What the Scheduler reports about one scenario."""

    scenario: str
    phase: ScenarioPhase
    iteration: int = 0
    requirement: str | None = None
    pending_approval: dict[str, Any] | None = None
    last_report: str | None = None
    reason: str | None = None
    started: bool = Field(False, description="True when this request started it")
