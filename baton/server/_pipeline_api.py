"""The pipeline's part of the control API: scenario routes and the scenarios in `status`.

`baton run` mounts `scenario_router(runtime)` beside the process's own routes (health,
status, tell/ask, tokens, stop); every route here talks to the `scheduler` actor, so a
runtime without one answers 409 (`NoSchedulerError`) and nothing else breaks.

| method and path | does | answers |
|---|---|---|
| `POST /scenarios` | submit `{"scenario", "requirement"?, "auto_approve"?}` | 200; 400 404 409 |
| `GET /scenarios`, `GET /scenarios/{name}` | scenario state | 200; 404 (no such scenario); 409 |
| `POST /scenarios/{name}/approve`, `.../reject` | decide a pending handoff | 200; 404; 409 |

409 is a state that refuses the request: no scheduler, nothing awaiting approval, or a
scenario whose record under `.baton/scheduler/` is damaged (`DamagedScenarioError`, naming
the file and what to do; `status` lists such scenarios). The Scheduler answers an unknown
scenario or a decision with nothing pending (`None`, `ScenarioRefused`) rather than raising,
so such a request is not dead-lettered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Path
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from baton.agents.messages import ResumeRound
from baton.errors import BatonError, validation_problems
from baton.pipeline.errors import (
    NoPendingHandoffError,
    NoSchedulerError,
    SchedulerReplyFailure,
    UnknownScenarioError,
)
from baton.pipeline.messages import (
    Approve,
    Dispatch,
    HandoffDelivered,
    Reject,
    RoundEnded,
    RoundWaiting,
    ScenarioQuery,
    SpendCapReached,
    StartScenario,
    WorkRefused,
)
from baton.pipeline.scenario_damage import DamagedQuery, DamagedScenario
from baton.pipeline.scenario_names import SCENARIO_NAME_PATTERN, SCENARIO_NAME_RULE
from baton.pipeline.scenario_state import SCHEDULER, ScenarioRefused, ScenarioState
from baton.runtime.errors import UnhandledMessageError
from baton.runtime.runtime import Runtime
from baton.server._error_docs import error_responses
from baton.server.errors import ControlRequestError

SCHEDULER_TIMEOUT = 30.0
STATUS_SCHEDULER_TIMEOUT = 5.0

PIPELINE_PROTOCOL: frozenset[type[BaseModel]] = frozenset(
    {
        Dispatch,
        ResumeRound,
        HandoffDelivered,
        RoundEnded,
        RoundWaiting,
        WorkRefused,
        SpendCapReached,
        DamagedQuery,
    }
)
"""What the pipeline's actors send each other: work orders, and the agents' reports on their
rounds; and the question `status` asks the Scheduler about damaged records (`status` is
where a person sees the answer). `tell`/`ask` take them (an operator may need to), but the
OpenAPI document leaves them out: they are the agents' protocol, not an API, and their rules
(a conversation that belongs to its scenario, a package version this runtime speaks) are
more than a schema says. The documented messages are the ones a person sends: `Prompt`,
`StartScenario`, `Approve`, `Reject`, `ScenarioQuery`."""


# Request bodies are strict: JSON's own types, as the OpenAPI document states them (no `0`
# taken for `false`, no `"1"` for a number).


class SubmitRequest(StartScenario):
    """A scenario to submit (a `StartScenario`), with its requirement and approval overrides."""

    model_config = ConfigDict(strict=True)


class RejectRequest(BaseModel):
    """Why a reviewer rejects a design; the reason goes back to Init."""

    model_config = ConfigDict(extra="forbid", strict=True)

    reason: str = Field(min_length=1, description="why; it goes back to Init")


class ScenarioStatus(BaseModel):
    """What `status` says of the pipeline: whether a scheduler runs, and its scenarios."""

    model_config = ConfigDict(frozen=True)

    scheduler: bool
    scenarios: list[ScenarioState] = Field(default_factory=list)
    damaged: list[DamagedScenario] = Field(
        default_factory=list, description="scenarios whose records cannot be read back"
    )
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


def _decided(name: str, reply: Any) -> ScenarioState:
    if isinstance(reply, ScenarioRefused):
        if reply.phase is None:
            raise UnknownScenarioError(name)
        raise NoPendingHandoffError(name, reply.phase)
    return _one_state(reply)


def _states(reply: Any) -> list[ScenarioState]:
    if not isinstance(reply, list) or not all(isinstance(s, ScenarioState) for s in reply):
        raise SchedulerReplyFailure(reply)
    return reply


def _damaged(reply: Any) -> list[DamagedScenario]:
    if not isinstance(reply, list) or not all(isinstance(d, DamagedScenario) for d in reply):
        raise SchedulerReplyFailure(reply)
    return reply


async def scenario_status(runtime: Runtime) -> ScenarioStatus:
    """The scheduler's scenarios for a status report (a failure to ask is reported, not raised)."""
    if not runtime.is_alive(SCHEDULER):
        return ScenarioStatus(scheduler=False)
    try:
        reply = await runtime.ask(SCHEDULER, ScenarioQuery(), timeout=STATUS_SCHEDULER_TIMEOUT)
        states = _states(reply)
        try:
            damaged = await runtime.ask(SCHEDULER, DamagedQuery(), timeout=STATUS_SCHEDULER_TIMEOUT)
        except UnhandledMessageError:
            damaged = []  # a scheduler of the user's own, which keeps no such records
        return ScenarioStatus(scheduler=True, scenarios=states, damaged=_damaged(damaged))
    except BatonError as exc:
        return ScenarioStatus(scheduler=True, error=str(exc))


# Every scenario route asks the scheduler: it may be missing or stopped, or the scenario's
# record damaged (409), fail (502), be slow (504) or refuse the request for a reason of its
# own (400, e.g. a bad scenario.toml); one that changes a scenario writes it to disk, which
# may be full (507).
_ASKED = (400, 409, 502, 504)
_WRITES = (*_ASKED, 404, 507)

ScenarioPath = Annotated[
    str,
    Path(pattern=SCENARIO_NAME_PATTERN, description=SCENARIO_NAME_RULE),
]


def scenario_router(runtime: Runtime, *, route_class: type[APIRoute] = APIRoute) -> APIRouter:
    """The scenario routes over `runtime`'s scheduler, each a `route_class` (the server's says
    how it reads a request)."""
    router = APIRouter(tags=["scenarios"], route_class=route_class)

    @router.post("/scenarios", response_model=ScenarioState, responses=error_responses(*_WRITES))
    async def submit(request: SubmitRequest) -> ScenarioState:
        """Submit a scenario to the scheduler (nothing new starts if it is already active);
        404 when it has no `scenario.toml` and no requirement is given."""
        # The scheduler takes the message type itself (a durable mailbox stores it by name).
        message = StartScenario.model_validate(request.model_dump())
        return _one_state(await _ask_scheduler(runtime, message, SCHEDULER_TIMEOUT))

    @router.get(
        "/scenarios", response_model=list[ScenarioState], responses=error_responses(*_ASKED)
    )
    async def scenarios() -> list[ScenarioState]:
        """Every scenario the scheduler knows."""
        return _states(await _ask_scheduler(runtime, ScenarioQuery(), SCHEDULER_TIMEOUT))

    @router.get(
        "/scenarios/{name}", response_model=ScenarioState, responses=error_responses(*_ASKED, 404)
    )
    async def scenario(name: ScenarioPath) -> ScenarioState:
        """One scenario's state; 404 when the scheduler knows no such scenario, 409 when its
        record is damaged."""
        query = _message(lambda: ScenarioQuery(scenario=name))
        reply = await _ask_scheduler(runtime, query, SCHEDULER_TIMEOUT)
        if reply is None:
            raise UnknownScenarioError(name)
        return _one_state(reply)

    @router.post(
        "/scenarios/{name}/approve",
        response_model=ScenarioState,
        responses=error_responses(*_WRITES),
    )
    async def approve(name: ScenarioPath) -> ScenarioState:
        """Approve the scenario's pending Init → Execute handoff; 409 when none is pending or
        the scenario's record is damaged."""
        message = _message(lambda: Approve(scenario=name))
        return _decided(name, await _ask_scheduler(runtime, message, SCHEDULER_TIMEOUT))

    @router.post(
        "/scenarios/{name}/reject",
        response_model=ScenarioState,
        responses=error_responses(*_WRITES),
    )
    async def reject(name: ScenarioPath, request: RejectRequest) -> ScenarioState:
        """Reject the pending handoff, the reason going back to Init; 409 when none is
        pending or the scenario's record is damaged."""
        message = _message(lambda: Reject(scenario=name, reason=request.reason))
        return _decided(name, await _ask_scheduler(runtime, message, SCHEDULER_TIMEOUT))

    return router
