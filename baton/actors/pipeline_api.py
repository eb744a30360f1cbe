"""The pipeline's part of the control API: scenario routes and the scenarios in `status`.

`baton run` mounts `scenario_router(runtime)` beside the process's own routes (health,
status, tell/ask, tokens, stop); every route here talks to the `scheduler` actor, so a
runtime without one answers 409 (`NoSchedulerError`) and nothing else breaks.

| method and path | does | answers |
|---|---|---|
| `POST /scenarios` | submit `{"scenario", "requirement"?, "auto_approve"?}` | 200; 409 |
| `GET /scenarios`, `GET /scenarios/{name}` | scenario state | 200; 404; 409 |
| `POST /scenarios/{name}/approve`, `.../reject` | decide a pending handoff | 200; 409 |
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from baton.actors.messages import (
    SCHEDULER,
    Approve,
    Reject,
    ScenarioQuery,
    ScenarioState,
    StartScenario,
)
from baton.errors import (
    BatonError,
    ControlRequestError,
    NoSchedulerError,
    SchedulerReplyFailure,
    UnknownScenarioError,
    validation_problems,
)
from baton.runtime.runtime import Runtime

SCHEDULER_TIMEOUT = 30.0
STATUS_SCHEDULER_TIMEOUT = 5.0


class RejectRequest(BaseModel):
    """Why a reviewer rejects a design; the reason goes back to Init."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(min_length=1, description="why; it goes back to Init")


class ScenarioStatus(BaseModel):
    """What `status` says of the pipeline: whether a scheduler runs, and its scenarios."""

    model_config = ConfigDict(frozen=True)

    scheduler: bool
    scenarios: list[ScenarioState] = Field(default_factory=list)
    error: str | None = Field(None, description="why the scenarios could not be read")


def _message(build: Callable[[], BaseModel]) -> BaseModel:
    try:
        return build()
    except ValidationError as exc:
        problems = "; ".join(validation_problems(exc)[:10])
        raise ControlRequestError(f"invalid scenario request: {problems}") from None


async def _ask_scheduler(runtime: Runtime, message: BaseModel, timeout: float) -> Any:
    if not runtime.is_alive(SCHEDULER):
        raise NoSchedulerError
    return await runtime.ask(SCHEDULER, message, timeout=timeout)


def _one_state(reply: Any) -> ScenarioState:
    if not isinstance(reply, ScenarioState):
        raise SchedulerReplyFailure(reply)
    return reply


def _states(reply: Any) -> list[ScenarioState]:
    if not isinstance(reply, list) or not all(isinstance(s, ScenarioState) for s in reply):
        raise SchedulerReplyFailure(reply)
    return reply


async def scenario_status(runtime: Runtime) -> ScenarioStatus:
    """The scheduler's scenarios for a status report (a failure to ask is reported, not raised)."""
    if not runtime.is_alive(SCHEDULER):
        return ScenarioStatus(scheduler=False)
    try:
        reply = await runtime.ask(SCHEDULER, ScenarioQuery(), timeout=STATUS_SCHEDULER_TIMEOUT)
        return ScenarioStatus(scheduler=True, scenarios=_states(reply))
    except BatonError as exc:
        return ScenarioStatus(scheduler=True, error=str(exc))


def scenario_router(runtime: Runtime) -> APIRouter:
    """The scenario routes over `runtime`'s scheduler."""
    router = APIRouter(tags=["scenarios"])

    @router.post("/scenarios", response_model=ScenarioState)
    async def submit(request: StartScenario) -> ScenarioState:
        """Submit a scenario to the scheduler (nothing new starts if it is already active)."""
        return _one_state(await _ask_scheduler(runtime, request, SCHEDULER_TIMEOUT))

    @router.get("/scenarios", response_model=list[ScenarioState])
    async def scenarios() -> list[ScenarioState]:
        """Every scenario the scheduler knows."""
        return _states(await _ask_scheduler(runtime, ScenarioQuery(), SCHEDULER_TIMEOUT))

    @router.get("/scenarios/{name}", response_model=ScenarioState)
    async def scenario(name: str) -> ScenarioState:
        """One scenario's state; 404 when the scheduler knows no such scenario."""
        query = _message(lambda: ScenarioQuery(scenario=name))
        reply = await _ask_scheduler(runtime, query, SCHEDULER_TIMEOUT)
        if reply is None:
            raise UnknownScenarioError(name)
        return _one_state(reply)

    @router.post("/scenarios/{name}/approve", response_model=ScenarioState)
    async def approve(name: str) -> ScenarioState:
        """Approve the scenario's pending Init → Execute handoff."""
        message = _message(lambda: Approve(scenario=name))
        return _one_state(await _ask_scheduler(runtime, message, SCHEDULER_TIMEOUT))

    @router.post("/scenarios/{name}/reject", response_model=ScenarioState)
    async def reject(name: str, request: RejectRequest) -> ScenarioState:
        """Reject the pending handoff; the reason goes back to Init."""
        message = _message(lambda: Reject(scenario=name, reason=request.reason))
        return _one_state(await _ask_scheduler(runtime, message, SCHEDULER_TIMEOUT))

    return router
