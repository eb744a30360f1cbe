"""The control API: an ASGI app (FastAPI) over one `Runtime`, served by `ControlServer`.

Endpoints (OpenAPI at `/openapi.json`, docs at `/docs`):

| method and path | does | answers |
|---|---|---|
| `GET /health` | liveness | 200 |
| `GET /status` | actors, context fill, scenarios, pending approvals, dead letters | 200 |
| `POST /actors/{name}/tell` | queue `{"type", "payload", "timeout"?}` | 202; 400 422 404 409 503 |
| `POST /actors/{name}/ask` | ask the same, reply as JSON | 200; 400 422 404 409 502 504 |
| `/scenarios...` | the pipeline's routes (`baton.actors.pipeline_api`) | |
| `POST /stop` | ask the process to stop gracefully | 202 |
| `GET /tokens?follow=&actor=&event=` | token-log records as NDJSON | 200 |

`GET /tokens` without `follow` sends the lines of the current log file and ends; with
`follow=true` it sends only records emitted from then on, until the client disconnects or
the server stops (reading history first would race the writer; `baton tail -f` reads the
file for that). Every error is `{"error": {"type", "message", "details"}}` where `type` is
the baton error class and `message` says what to do. Nothing a client sends is allowed to
escape as an exception: unexpected ones become a logged 500.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from importlib.metadata import version
from typing import Annotated, Any

import anyio
import structlog
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from baton.actors.pipeline_api import scenario_router, scenario_status
from baton.errors import (
    BatonError,
    ControlRequestError,
    InvalidPayloadError,
    MailboxStillFullError,
    validation_problems,
)
from baton.runtime._error_wire import ErrorBody, ErrorDetail, error_body, status_for
from baton.runtime.ref import DEFAULT_ASK_TIMEOUT
from baton.runtime.runtime import Runtime
from baton.server._control_models import (
    DEFAULT_TELL_TIMEOUT,
    ActorReport,
    AskReply,
    Health,
    MessageRequest,
    StatusReport,
    StopAccepted,
    Told,
    utf8_safe,
)
from baton.server._tail import record_matches
from baton.server._token_stream import NDJSON, FollowResponse, file_lines

log = structlog.get_logger(__name__)

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody} for status in (400, 404, 409, 422, 502, 503, 504)
}


def _error_response(status: int, detail: ErrorDetail) -> JSONResponse:
    body = utf8_safe(ErrorBody(error=detail).model_dump(mode="json"))
    return JSONResponse(body, status_code=status)


def _baton_error_response(error: BatonError) -> JSONResponse:
    body = error_body(error)
    return _error_response(status_for(error), body.error)


def _problems(errors: list[Any]) -> str:
    return "; ".join(validation_problems(errors, show_input=False)[:10])


class _CatchAll:
    """Last line of defence: an exception that escapes an endpoint becomes a logged 500."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:  # a client must never take the runtime down
            log.exception("control.request_failed", path=scope.get("path"), error=repr(exc))
            if not started:
                detail = ErrorDetail(
                    type="InternalError",
                    message=(
                        f"the runtime failed handling this request ({type(exc).__name__}: "
                        f"{exc}); it keeps running — see its log, and report the bug"
                    ),
                )
                await _error_response(500, detail)(scope, receive, send)


def _reply_json(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return utf8_safe(value.model_dump(mode="json"))
    # Anything else a handler returns goes out as JSON when it can, else as its repr.
    return utf8_safe(to_jsonable_python(value, fallback=repr))


async def _build_message(runtime: Runtime, actor: str, request: MessageRequest) -> BaseModel:
    message_class = await runtime.resolve_message_type(actor, request.type)
    try:
        return message_class.model_validate(request.payload)
    except ValidationError as exc:
        raise InvalidPayloadError(
            f"invalid payload for {request.type} (actor {actor!r}): "
            f"{_problems(exc.errors(include_url=False))} — fix these fields and resend"
        ) from None
    except (TypeError, ValueError) as exc:
        raise InvalidPayloadError(
            f"invalid payload for {request.type} (actor {actor!r}): {exc} — fix it and resend"
        ) from None


def _install_error_handlers(app: FastAPI) -> None:
    async def on_baton_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, BatonError)
        return _baton_error_response(exc)

    async def on_invalid_request(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        hint = "see /openapi.json for the expected body"
        if "json" not in request.headers.get("content-type", ""):
            hint = "send the body as JSON with `Content-Type: application/json`; " + hint
        message = (
            f"invalid request to {request.method} {request.url.path}: "
            f"{_problems(list(exc.errors()))} — {hint}"
        )
        return _error_response(422, ErrorDetail(type=ControlRequestError.__name__, message=message))

    async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 404:
            message = f"no endpoint {request.method} {request.url.path} — see /openapi.json"
        elif exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path} — see /openapi.json"
        else:
            message = f"{exc.detail} ({request.method} {request.url.path})"
        detail = ErrorDetail(type=ControlRequestError.__name__, message=message)
        return _error_response(exc.status_code, detail)

    app.add_exception_handler(BatonError, on_baton_error)
    app.add_exception_handler(RequestValidationError, on_invalid_request)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_middleware(_CatchAll)


def _process_routes(app: FastAPI, runtime: Runtime, on_stop: Callable[[], None]) -> None:
    @app.get("/health", response_model=Health)
    async def health() -> Health:
        """Whether the runtime is up, and which process it is."""
        workspace = str(runtime.workspace) if runtime.workspace else None
        return Health(pid=os.getpid(), workspace=workspace, version=version("baton"))

    @app.get("/status", response_model=StatusReport)
    async def status() -> StatusReport:
        """Actors (with context fill), scenarios, pending approvals and dead letters."""
        return await _status_report(runtime)

    @app.post("/stop", response_model=StopAccepted, status_code=202)
    async def stop() -> StopAccepted:
        """Ask the process to drain its actors and exit; answers before it starts stopping."""
        log.info("control.stop_requested")
        on_stop()
        return StopAccepted()


async def _status_report(runtime: Runtime) -> StatusReport:
    actors = [
        ActorReport(
            name=actor.name,
            actor_type=actor.actor_type,
            state=actor.state,
            mailbox_depth=actor.mailbox_depth,
            mailbox_capacity=actor.mailbox_capacity,
            handled=actor.handled,
            failures=actor.failures,
            restarts=actor.restarts,
            stop_reason=actor.stop_reason,
            context=runtime.context_providers.fill(actor.name),
        )
        for actor in runtime.status()
    ]
    pipeline = await scenario_status(runtime)
    scenarios = pipeline.scenarios
    token_path = runtime.token_log.path
    return StatusReport.model_validate(
        {
            "pid": os.getpid(),
            "workspace": str(runtime.workspace) if runtime.workspace else None,
            "actors": actors,
            "scheduler": pipeline.scheduler,
            "scenarios": scenarios,
            "pending_approvals": [s for s in scenarios if s.phase == "awaiting_approval"],
            "scenarios_error": pipeline.error,
            "dead_letters": runtime.dead_letters.total,
            "token_log": str(token_path) if token_path else None,
            "token_records": runtime.token_log.written,
        }
    )


def _actor_routes(app: FastAPI, runtime: Runtime) -> None:
    @app.post("/actors/{name}/tell", response_model=Told, status_code=202)
    async def tell(name: str, request: MessageRequest) -> Told:
        """Queue a message for actor `name`; waits up to `timeout` for room in its mailbox."""
        message = await _build_message(runtime, name, request)
        timeout = request.timeout or DEFAULT_TELL_TIMEOUT
        with anyio.move_on_after(timeout):
            await runtime.tell(name, message, sender="control")
            return Told(actor=name, type=request.type)
        capacity = next((a.mailbox_capacity for a in runtime.status() if a.name == name), 0)
        raise MailboxStillFullError(name, capacity, timeout)

    @app.post("/actors/{name}/ask", response_model=AskReply)
    async def ask(name: str, request: MessageRequest) -> AskReply:
        """Send a message to actor `name` and wait up to `timeout` for its reply."""
        message = await _build_message(runtime, name, request)
        timeout = request.timeout or DEFAULT_ASK_TIMEOUT
        reply = await runtime.ask(name, message, timeout=timeout, sender="control")
        reply_type = type(reply).__name__ if isinstance(reply, BaseModel) else None
        return AskReply(actor=name, type=reply_type, reply=_reply_json(reply))


def _token_routes(app: FastAPI, runtime: Runtime, closing: anyio.Event) -> None:
    @app.get(
        "/tokens",
        response_class=StreamingResponse,
        responses={200: {"content": {NDJSON: {}}, "description": "one JSON record per line"}},
    )
    async def tokens(
        follow: Annotated[bool, Query(description="stream new records until disconnect")] = False,
        actor: Annotated[str | None, Query(description="only this actor's records")] = None,
        event: Annotated[
            str | None, Query(description="only this event, or family (`handoff`)")
        ] = None,
    ) -> Response:
        """Token-log records as NDJSON: the current file's lines, or new records when following."""

        def keep(record: dict[str, Any]) -> bool:
            return record_matches(record, actor=actor, event=event)

        if follow:
            return FollowResponse(runtime.token_log, keep, closing)
        return StreamingResponse(file_lines(runtime.token_log.path, keep), media_type=NDJSON)


def create_control_app(
    runtime: Runtime,
    *,
    on_stop: Callable[[], None],
    closing: anyio.Event | None = None,
) -> FastAPI:
    """The control API over `runtime`.

    `on_stop` is called by `POST /stop` (the owner of the process decides how to stop);
    setting `closing` ends every following `/tokens` stream, so a server can shut down.
    Call it from async code (it makes an anyio event when `closing` is not given).
    """
    app = FastAPI(
        title="baton control API",
        version=version("baton"),
        description="Control one running baton runtime over its Unix socket.",
        responses=_ERRORS,
    )
    _install_error_handlers(app)
    _process_routes(app, runtime, on_stop)
    _actor_routes(app, runtime)
    app.include_router(scenario_router(runtime))  # the pipeline's own routes
    _token_routes(app, runtime, closing if closing is not None else anyio.Event())
    return app
