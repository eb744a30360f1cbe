"""The body of `GET /status`: actors with their context fill, scenarios, pending approvals,
damaged scenario records, dead letters and the token log (shared by the control API, the
`Client` and `baton status`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from baton.pipeline.scenario_damage import DamagedScenario
from baton.pipeline.scenario_state import ScenarioState
from baton.runtime.context_fill import ContextFill

# No docstrings on the bodies: pydantic would add them to the OpenAPI document.


class ActorReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    actor_type: str
    state: str
    mailbox_depth: int
    mailbox_capacity: int
    handled: int
    failures: int
    restarts: int
    stop_reason: str | None
    context: ContextFill | None = Field(
        None, description="context size and fill, for actors that report one"
    )
    working_on: list[str] = Field(
        default_factory=list,
        description="the keys (an agent's conversations) a keyed actor works on now",
    )


class StatusReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pid: int
    workspace: str | None
    actors: list[ActorReport]
    scheduler: bool = Field(description="whether a scheduler actor is running")
    scenarios: list[ScenarioState] = Field(description="every scenario the scheduler knows")
    pending_approvals: list[ScenarioState] = Field(description="scenarios awaiting approval")
    scenarios_error: str | None = Field(None, description="why scenarios could not be listed")
    damaged_scenarios: list[DamagedScenario] = Field(
        default_factory=list,
        description="scenarios whose record under `.baton/scheduler/` cannot be read back "
        "(refused until the file is moved aside): each with its file, the problem, the fix",
    )
    dead_letters: int = Field(description="messages dead-lettered since start")
    token_log: str | None = Field(description="path of the token log")
    token_records: int = Field(description="token-log records written since start")
