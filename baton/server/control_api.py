"""The control API: an ASGI app (FastAPI) over one `Runtime`, served by `ControlServer`.

Endpoints (OpenAPI at `/openapi.json`, docs at `/docs`):

| method and path | does | answers |
|---|---|---|
| `GET /health` | liveness | 200 |
| `GET /status` | actors, context fill, scenarios, pending approvals, dead letters | 200 |
| `POST /actors/{name}/tell` | queue `{"type", "payload", "timeout"?}` | 202; 404 409 422 503 |
| `POST /actors/{name}/ask` | ask the same, reply as JSON | 200; 400 404 409 422 502 504 |
| `/scenarios...` | the pipeline's routes (`baton.server._pipeline_api`) | |
| `POST /stop` | ask the process to stop gracefully | 202 |
| `GET /tokens?follow=&actor=&event=` | token-log records as NDJSON | 200 |
| `GET /dead-letters?limit=` | the newest dead letters, newest last | 200 |
| `GET /memory?tag=`, `GET /memory/search?q=` | long-term memory entries, found entries | 200; 422 |
| `DELETE /memory/{id}` | forget one entry (`baton.server._memory_api`) | 200; 404 422 |

Any request can also get 408 (it did not arrive within `[server] request_timeout`), 413 (a
body over `[server] max_body_bytes`), 415 (a body that is not JSON), 422 (an invalid body or
query, JSON nested too deep) and 405 with `Allow` (a method the path does not take). Status
codes go by meaning: 404 something that does not exist, 409 a state that refuses the request,
422 a request to fix, 5xx the runtime's side (docs/architecture.md, "A message, from
`baton tell` to a handler and back").

The document describes tell and ask per actor, with the message types each one accepts
(`baton.server._openapi`). `GET /tokens` without `follow` sends the lines of the current log
file and ends; with `follow=true` it sends only records emitted from then on, until the
client disconnects or the server stops (reading history first would race the writer;
`baton tail -f` reads the file for that). Every error is `{"error": {"type", "message",
"details"}}` where `type` is the baton error class and `message` says what to do. Nothing a
client sends is allowed to escape as an exception: unexpected ones become a logged 500.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from importlib.metadata import version
from typing import Annotated, Any

import anyio
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import baton.pipeline.statuses  # noqa: F401 - the pipeline's errors' statuses, registered
from baton._log import get_logger
from baton.errors import BatonError, validation_problems
from baton.runtime._error_wire import ErrorDetail, error_body, status_for
from baton.runtime.ref import DEFAULT_ASK_TIMEOUT
from baton.runtime.runtime import Runtime
from baton.server._control_models import (
    DEFAULT_TELL_TIMEOUT,
    AskReply,
    Health,
    MessageRequest,
    StopAccepted,
    Told,
    utf8_safe,
)
from baton.server._dead_letter_api import dead_letter_routes
from baton.server._error_docs import error_responses
from baton.server._json_body import OffLoopJsonRoute, off_the_loop_if_large
from baton.server._memory_api import memory_routes
from baton.server._openapi import ANY_ROUTE, control_openapi
from baton.server._pipeline_api import PIPELINE_PROTOCOL, scenario_router, scenario_status
from baton.server._request_limits import RequestGuard, error_response, request_error
from baton.server._status_models import ActorReport, StatusReport
from baton.server._tail import record_matches
from baton.server._token_stream import NDJSON, FollowResponse, file_lines
from baton.server.errors import InvalidPayloadError, MailboxStillFullError

log = get_logger(__name__)


def _baton_error_response(error: BatonError) -> JSONResponse:
    body = error_body(error)
    return error_response(status_for(error), body.error)


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
                await error_response(500, detail)(scope, receive, send)


def _reply_json(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return utf8_safe(value.model_dump(mode="json"))
    # Anything else a handler returns goes out as JSON when it can, else as its repr.
    return utf8_safe(to_jsonable_python(value, fallback=repr))


def _parse_message_request(body: bytes) -> MessageRequest:
    """The `{"type", "payload", "timeout"?}` body of a tell or an ask, parsed and validated as
    FastAPI would (a `RequestValidationError` for what it would refuse)."""
    if not body:
        missing = {"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}
        raise RequestValidationError([missing])
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise _InvalidJsonBody(exc) from None
    try:
        return MessageRequest.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in errors]) from None


def _validate_payload(actor: str, request: MessageRequest, message_class: type[BaseModel]) -> Any:
    try:
        # Strict JSON validation, the rules the OpenAPI document gives for the payload: a
        # boolean is `true` or `false`, not `0`; a string is not a number.
        return message_class.model_validate_json(json.dumps(request.payload), strict=True)
    except ValidationError as exc:
        raise InvalidPayloadError(
            f"invalid payload for {request.type} (actor {actor!r}): "
            f"{_problems(exc.errors(include_url=False))} — fix these fields and resend"
        ) from None
    except (TypeError, ValueError) as exc:
        raise InvalidPayloadError(
            f"invalid payload for {request.type} (actor {actor!r}): {exc} — fix it and resend"
        ) from None


async def _build_message(
    runtime: Runtime, actor: str, http: Request
) -> tuple[MessageRequest, BaseModel]:
    body = await http.body()
    request = await off_the_loop_if_large(len(body), lambda: _parse_message_request(body))
    message_class = await runtime.resolve_message_type(actor, request.type)
    message = await off_the_loop_if_large(
        len(body), lambda: _validate_payload(actor, request, message_class)
    )
    return request, message


class _InvalidJsonBody(Exception):
    """A tell or ask body the JSON parser refused (answered 422 by `_install_error_handlers`)."""

    def __init__(self, cause: ValueError) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _parameter_problem(error: dict[str, Any]) -> str:
    where, name = error["loc"][0], error["loc"][1]
    if error.get("type") == "bool_parsing":
        what = "must be true or false"
    elif error.get("type") == "missing":
        what = "is required"
    else:
        what = str(error.get("msg", "is invalid"))
        what = what[:1].lower() + what[1:]
    shown = "" if error.get("type") == "missing" else f" (got {error.get('input')!r:.60})"
    return f"{where} parameter `{name}` {what}{shown}"


def _request_problems(errors: list[dict[str, Any]]) -> tuple[str, str]:
    """The problems of an invalid request, each in the words of its place, and what to read."""
    parameters = [e for e in errors if e.get("loc", ())[:1] in (("query",), ("path",))]
    body = [e for e in errors if e not in parameters]
    problems = [_parameter_problem(e) for e in parameters[:10]]
    if body:
        problems.append(_problems(body))
    hints = []
    if parameters:
        hints.append("its parameters")
    if body:
        hints.append("the expected body")
    return "; ".join(problems), " and ".join(hints)


_METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH")


def _allowed_methods(app: FastAPI, scope: Scope) -> str:
    """Every method some route takes on this path: a 405's `Allow` must list them all, and
    the router's own stops at the first route whose path matches."""
    allowed = [
        method
        for method in _METHODS
        if any(
            route.matches({**scope, "method": method})[0] == Match.FULL
            for route in app.router.routes
        )
    ]
    return ", ".join(allowed)


def _not_json(request: Request, cause: BaseException) -> JSONResponse:
    message = (
        f"the body of {request.method} {request.url.path} is not valid JSON "
        f"({type(cause).__name__}: {cause}) — see /openapi.json for the expected body"
    )
    return request_error(422, message)


def _install_error_handlers(app: FastAPI) -> None:
    async def on_baton_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, BatonError)
        return _baton_error_response(exc)

    async def on_invalid_request(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        problems, read = _request_problems(list(exc.errors()))
        message = (
            f"invalid request to {request.method} {request.url.path}: {problems} — see "
            f"/openapi.json for {read}"
        )
        return request_error(422, message)

    async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        headers = dict(exc.headers or {})
        if exc.status_code == 404:
            message = f"no endpoint {request.method} {request.url.path} — see /openapi.json"
        elif exc.status_code == 405:
            headers["Allow"] = _allowed_methods(app, request.scope)
            message = (
                f"{request.method} is not allowed on {request.url.path}; it takes "
                f"{headers['Allow']} — see /openapi.json"
            )
        elif exc.status_code == 400 and exc.__cause__ is not None:
            # FastAPI could not parse the body (the guard lets through only UTF-8 JSON of a
            # sane shape, so this is a parser's own refusal): an invalid body, named as such.
            return _not_json(request, exc.__cause__)
        else:
            message = f"{exc.detail} ({request.method} {request.url.path})"
        return request_error(exc.status_code, message, headers)

    async def on_invalid_json(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, _InvalidJsonBody)
        return _not_json(request, exc.cause)

    app.add_exception_handler(BatonError, on_baton_error)
    app.add_exception_handler(_InvalidJsonBody, on_invalid_json)
    app.add_exception_handler(RequestValidationError, on_invalid_request)
    app.add_exception_handler(StarletteHTTPException, on_http_error)


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
            working_on=list(actor.working_on),
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
            "damaged_scenarios": pipeline.damaged,
            "dead_letters": runtime.dead_letters.total,
            "token_log": str(token_path) if token_path else None,
            "token_records": runtime.token_log.written,
        }
    )


def _actor_routes(app: FastAPI, runtime: Runtime) -> None:
    # Described per actor, with the types each one takes (`baton.server._openapi`).
    @app.post("/actors/{name}/tell", response_model=Told, status_code=202, include_in_schema=False)
    async def tell(name: str, http: Request) -> Told:
        """Queue a message for actor `name`; waits up to `timeout` for room in its mailbox."""
        request, message = await _build_message(runtime, name, http)
        timeout = request.timeout or DEFAULT_TELL_TIMEOUT
        local = next((a for a in runtime.status() if a.name == name), None)
        if local is not None and local.mailbox_depth < local.mailbox_capacity:
            # Room now: what is left is the write (a durable mailbox stores the message
            # before `tell` returns), which `timeout` must not cut short, or the message
            # could be stored yet reported lost.
            await runtime.tell(name, message, sender="control")
            return Told(actor=name, type=request.type)
        with anyio.move_on_after(timeout):
            await runtime.tell(name, message, sender="control")
            return Told(actor=name, type=request.type)
        capacity = local.mailbox_capacity if local is not None else 0
        raise MailboxStillFullError(name, capacity, timeout)

    @app.post("/actors/{name}/ask", response_model=AskReply, include_in_schema=False)
    async def ask(name: str, http: Request) -> AskReply:
        """Send a message to actor `name` and wait up to `timeout` for its reply."""
        request, message = await _build_message(runtime, name, http)
        timeout = request.timeout or DEFAULT_ASK_TIMEOUT
        reply = await runtime.ask(name, message, timeout=timeout, sender="control")
        reply_type = type(reply).__name__ if isinstance(reply, BaseModel) else None
        return AskReply(actor=name, type=reply_type, reply=_reply_json(reply))


def _token_routes(app: FastAPI, runtime: Runtime, closing: anyio.Event) -> None:
    @app.get("/tokens", response_class=StreamingResponse)
    async def tokens(
        follow: Annotated[
            bool,
            Query(description="`true`: stream the records emitted from now on, until disconnect"),
        ] = False,
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
    max_body_bytes: int | None = None,
    request_timeout: float | None = None,
) -> FastAPI:
    """The control API over `runtime`.

    `on_stop` is called by `POST /stop` (the owner of the process decides how to stop);
    setting `closing` ends every following `/tokens` stream, so a server can shut down.
    A request body may be `max_body_bytes` long and must arrive within `request_timeout`
    seconds of its headers (by default `[server]` of the runtime's configuration).
    Call it from async code (it makes an anyio event when `closing` is not given).
    """
    limits = runtime.config.server
    app = FastAPI(
        title="baton control API",
        version=version("baton"),
        description=(
            "Control one running baton runtime over its Unix socket. Every error is "
            '`{"error": {"type", "message", "details"}}`: `type` is the baton error class, '
            "`message` says what to do."
        ),
        responses=error_responses(*ANY_ROUTE),  # the rest per route
    )
    app.router.route_class = OffLoopJsonRoute  # a large body is parsed on a worker thread
    _install_error_handlers(app)
    _process_routes(app, runtime, on_stop)
    dead_letter_routes(app, runtime)
    memory_routes(app, runtime)
    _actor_routes(app, runtime)
    app.include_router(scenario_router(runtime, route_class=OffLoopJsonRoute))
    _token_routes(app, runtime, closing if closing is not None else anyio.Event())
    app.openapi = control_openapi(  # type: ignore[method-assign]
        app, runtime, undocumented=PIPELINE_PROTOCOL
    )
    app.add_middleware(
        RequestGuard,
        max_body_bytes=limits.max_body_bytes if max_body_bytes is None else max_body_bytes,
        timeout=limits.request_timeout if request_timeout is None else request_timeout,
    )
    app.add_middleware(_CatchAll)  # outermost: it also catches a failing guard
    return app
