"""What the Scheduler reports about a scenario (`ScenarioState`, `ScenarioRefused`), its
phases and the Scheduler's actor name: the shapes a client reads, kept apart from the
pipeline's messages so that `baton status`, `show`, `approve`, `reject` and `submit` load
pydantic and nothing of the agents or the context (docs/architecture.md, "What a command
imports")."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

SCHEDULER = "scheduler"
"""The Scheduler's actor name."""

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


class ScenarioState(BaseModel):
    """What the Scheduler reports about one scenario."""

    scenario: str
    phase: ScenarioPhase
    iteration: int = 0
    run: int = Field(
        1,
        description="which run of the scenario this is: 1, then 2 once it is submitted again "
        "(earlier runs' files are kept in `scenarios/<name>/runs/<run>/`)",
    )
    requirement: str | None = None
    pending_approval: dict[str, Any] | None = None
    last_report: str | None = None
    reason: str | None = None
    waiting: str | None = Field(
        None,
        description="why the scenario cannot move on for now and when it tries again, e.g. "
        "`waiting: init: API unreachable, retrying at 12:03:04`",
    )
    started: bool = Field(False, description="True when this request started it")
    cost_usd: float | None = Field(
        None,
        description="estimated USD this run's model calls cost so far (the sum of their "
        "`cost_usd`); null when a call's price is unknown",
    )
    max_cost_usd: float | None = Field(None, description="this run's spend cap; null: none")


class ScenarioRefused(BaseModel):
    """The Scheduler's answer to an `Approve` or `Reject` it cannot carry out: no scenario by
    that name (`phase` None), or none awaiting approval. An answer, not an error: the
    request is not dead-lettered, and the control API turns it into a 404 or a 409."""

    scenario: str
    phase: ScenarioPhase | None = Field(None, description="the scenario's phase; None: unknown")
    reason: str
