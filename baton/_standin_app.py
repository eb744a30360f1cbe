"""The Messages API stand-in's request handling: checks, faults, replies, records.

`StandInState` is everything the handlers and the public `MessagesAPIStandIn` share;
`StandInApp` turns requests into the API's answers (see `baton.testing` for the behaviour).
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from baton._standin_wire import (
    StandInModel,
    error_body,
    error_type_for,
    message_body,
    stream_events,
    usage_body,
)
from baton.actors._prefix_cache import PrefixCache
from baton.actors.model import CallContext, Model, bind_call
from baton.actors.scripted_model import ScriptedResponse
from baton.context.payload import Payload
from baton.context.tokens import estimate_block_tokens, estimate_payload_tokens
from baton.context.validation import validate_request

Endpoint = Literal["messages", "count_tokens", "models"]
StandInPolicy = Callable[[Mapping[str, Any]], ScriptedResponse | str]
"""Decides the reply to a valid `/v1/messages` request body when no scripted reply is queued."""

FAST_RETRY_AFTER = 0.001
"""The `retry-after` injected faults send by default. The SDK ignores a value of 0 (and then
backs off 0.5-8 s), but honours any positive one, so a millisecond keeps retry tests fast."""
_SECRET_HEADERS = frozenset({"x-api-key", "authorization"})
_COUNT_TOKENS_FIELDS = frozenset(
    {"messages", "model", "system", "tools", "tool_choice", "thinking", "cache_control"}
    | {"output_config", "speed", "mcp_servers"}
)


@dataclass(frozen=True)
class Fault:
    """One injected failure, used by the next request to its endpoint.

    `delay` waits first (then the request goes on unless another field says otherwise);
    `status` answers with that HTTP status and the API's error body, with `retry-after` /
    `retry-after-ms` headers when `retry_after` is set; `mid_stream` lets a streaming request
    start and then breaks it off with an `error` event of `error_type` (a non-streaming request
    gets the HTTP 529 the API would send instead).
    """

    endpoint: Endpoint = "messages"
    status: int | None = None
    error_type: str | None = None
    message: str | None = None
    retry_after: float | None = FAST_RETRY_AFTER
    delay: float = 0.0
    mid_stream: bool = False

    def describe(self) -> str:
        """A short label for the request record."""
        if self.mid_stream:
            return f"mid_stream:{self.error_type or 'overloaded_error'}"
        if self.status is not None:
            return f"status:{self.status}"
        return f"delay:{self.delay:g}s"


@dataclass(frozen=True)
class RecordedRequest:
    """One request the stand-in received, secrets redacted, and how it answered."""

    method: str
    path: str
    endpoint: Endpoint | None
    headers: dict[str, str]
    body: Any
    status: int
    stream: bool = False
    authorized: bool = False
    fault: str | None = None
    problems: tuple[str, ...] = ()


def default_standin_policy(body: Mapping[str, Any]) -> ScriptedResponse:
    """Answer with one text block quoting the start of the last user text."""
    last = ""
    for message in reversed(body.get("messages") or []):
        content = message.get("content")
        if message.get("role") != "user":
            continue
        if isinstance(content, str):
            last = content
        elif isinstance(content, list):
            last = " ".join(b.get("text", "") for b in content if b.get("type") == "text")
        break
    quoted = " ".join(last.split())[:80] or "your request"
    return ScriptedResponse.model_validate(f"Stand-in reply to: {quoted}")


@dataclass
class StandInState:
    """The stand-in's settings, queues, counters and records, shared with its handlers."""

    api_key: str | None
    models: dict[str, StandInModel]
    context_window: int | None
    policy: StandInPolicy
    cache: PrefixCache
    chunk_chars: int
    model: Model | None = None
    requests: list[RecordedRequest] = field(default_factory=list)
    replies: deque[ScriptedResponse] = field(default_factory=deque)
    faults: deque[Fault] = field(default_factory=deque)
    in_flight: int = 0
    max_in_flight: int = 0
    next_id: int = 0
    stop: anyio.Event = field(default_factory=anyio.Event)
    gate: anyio.Event | None = None
    changed: anyio.Event = field(default_factory=anyio.Event)

    def notify(self) -> None:
        """Wake everyone waiting for `in_flight` to change."""
        changed, self.changed = self.changed, anyio.Event()
        changed.set()


class StandInApp:
    """The ASGI app: `/v1/messages`, `/v1/messages/count_tokens`, `/v1/models/{id}`."""

    def __init__(self, state: StandInState) -> None:
        self.state = state
        self.asgi = Starlette(
            routes=[
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/v1/models/{model_id:path}", self._model_info, methods=["GET"]),
            ],
            exception_handlers={HTTPException: self._http_error},
        )

    def authorized(self, request: Request) -> bool:
        """Whether the request carries the expected key (`x-api-key` or a bearer token)."""
        key = request.headers.get("x-api-key")
        bearer = request.headers.get("authorization", "")
        given = key or (bearer[len("Bearer ") :] if bearer.startswith("Bearer ") else None)
        if self.state.api_key is None:
            return bool(given)
        return given == self.state.api_key

    def _request_id(self) -> str:
        self.state.next_id += 1
        return f"req_standin_{self.state.next_id:06d}"

    def _record(
        self, request: Request, endpoint: Endpoint | None, body: Any, status: int, **extra: Any
    ) -> None:
        headers = {
            k: ("[redacted]" if k in _SECRET_HEADERS else v) for k, v in request.headers.items()
        }
        self.state.requests.append(
            RecordedRequest(
                method=request.method,
                path=request.url.path,
                endpoint=endpoint,
                headers=headers,
                body=body,
                status=status,
                authorized=self.authorized(request),
                **extra,
            )
        )

    def _error(
        self,
        status: int,
        message: str | None = None,
        *,
        error_type: str | None = None,
        retry_after: float | None = None,
    ) -> JSONResponse:
        request_id = self._request_id()
        headers = {"request-id": request_id}
        if retry_after is not None:
            headers["retry-after-ms"] = str(max(1, round(retry_after * 1000)))
            # Whole seconds, rounded up: a client reading only this header never retries early.
            headers["retry-after"] = str(math.ceil(retry_after))
        body = error_body(error_type or error_type_for(status), message, request_id)
        return JSONResponse(body, status_code=status, headers=headers)

    async def _http_error(self, request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        self._record(request, None, None, status)
        return self._error(status, f"{request.method} {request.url.path}: {exc}")

    async def _wait(self, seconds: float) -> None:
        # Waiting on the stop event, not a bare sleep, so closing the stand-in never hangs
        # on a request that is still being delayed.
        with anyio.move_on_after(seconds):
            await self.state.stop.wait()

    def _take_fault(self, endpoint: Endpoint) -> Fault | None:
        for fault in self.state.faults:
            if fault.endpoint == endpoint:
                self.state.faults.remove(fault)
                return fault
        return None

    async def _preflight(
        self, request: Request, endpoint: Endpoint
    ) -> tuple[Any, Fault | None, Response | None]:
        """Auth, version, body and faults: the parsed body, the fault, or an early answer."""
        body: Any = None
        if request.method == "POST":
            try:
                body = json.loads(await request.body() or b"null")
            except ValueError as exc:
                self._record(request, endpoint, None, 400)
                return None, None, self._error(400, f"the request body is not valid JSON: {exc}")
        if not self.authorized(request):
            self._record(request, endpoint, body, 401)
            return body, None, self._error(401, "invalid x-api-key")
        if not request.headers.get("anthropic-version"):
            self._record(request, endpoint, body, 400)
            return body, None, self._error(400, "anthropic-version: header is required")
        fault = self._take_fault(endpoint)
        if fault is not None and fault.delay:
            await self._wait(fault.delay)
        if fault is not None and fault.status is not None:
            self._record(request, endpoint, body, fault.status, fault=fault.describe())
            answer = self._error(
                fault.status,
                fault.message,
                error_type=fault.error_type,
                retry_after=fault.retry_after,
            )
            return body, fault, answer
        return body, fault, None

    def _model_problem(self, body: Any) -> Response | None:
        model = body.get("model") if isinstance(body, Mapping) else None
        if isinstance(model, str) and model not in self.state.models:
            return self._error(404, f"model: {model}")
        return None

    async def _messages(self, request: Request) -> Response:
        body, fault, early = await self._preflight(request, "messages")
        if early is not None:
            return early
        problems = validate_request(body)
        stream = isinstance(body, Mapping) and body.get("stream") is True
        if isinstance(body, Mapping) and not isinstance(body.get("stream", False), bool):
            problems.append("stream: Input should be a valid boolean")
        if problems:
            self._record(request, "messages", body, 400, problems=tuple(problems))
            return self._error(400, "; ".join(problems))
        if (missing := self._model_problem(body)) is not None:
            self._record(request, "messages", body, 404)
            return missing
        card = self.state.models[body["model"]]
        if body["max_tokens"] > card.max_tokens:
            message = (
                f"max_tokens: {body['max_tokens']} > {card.max_tokens}, which is the maximum "
                f"allowed number of output tokens for {card.id}"
            )
            self._record(request, "messages", body, 400, problems=(message,))
            return self._error(400, message)
        tokens = estimate_payload_tokens(body)
        window = self.state.context_window or card.max_input_tokens
        if tokens > window:
            message = f"prompt is too long: {tokens} tokens > {window} maximum"
            self._record(request, "messages", body, 400, problems=(message,))
            return self._error(400, message)
        label = fault.describe() if fault is not None else None
        if fault is not None and fault.mid_stream and not stream:
            self._record(request, "messages", body, 529, fault=label)
            return self._error(529, fault.message, error_type=fault.error_type)
        self._record(request, "messages", body, 200, stream=stream, fault=label)
        return await self._answer(body, stream, fault, CallContext.from_headers(request.headers))

    async def _reply_from_model(
        self, body: Mapping[str, Any], call: CallContext | None
    ) -> ScriptedResponse:
        assert self.state.model is not None
        payload = cast(Payload, {k: v for k, v in body.items() if k != "stream"})
        if call is None:
            response = await self.state.model.create(payload)
        else:
            with bind_call(call):
                response = await self.state.model.create(payload)
        return ScriptedResponse.model_validate(
            {"content": response.content, "stop_reason": response.stop_reason}
        )

    async def _answer(
        self,
        body: Mapping[str, Any],
        stream: bool,
        fault: Fault | None,
        call: CallContext | None = None,
    ) -> Response:
        state = self.state
        state.in_flight += 1
        state.max_in_flight = max(state.max_in_flight, state.in_flight)
        self.state.notify()
        try:
            if self.state.gate is not None:
                await self.state.gate.wait()
            breaks_off = fault is not None and fault.mid_stream
            if state.replies:
                # A stream that breaks off never delivered its reply: keep it for the retry.
                reply = state.replies[0] if breaks_off else state.replies.popleft()
            elif self.state.model is not None:
                reply = await self._reply_from_model(body, call)
            else:
                reply = ScriptedResponse.model_validate(self.state.policy(body))
        finally:
            state.in_flight -= 1
            self.state.notify()
        request_id = self._request_id()
        content = reply.to_content(f"toolu_{request_id}")
        cached = self.state.cache.usage_for(body, namespace=body["model"])
        output_tokens = max(1, sum(estimate_block_tokens(b) for b in content))
        message = message_body(
            message_id=f"msg_{request_id}",
            model=body["model"],
            content=content,
            stop_reason=reply.effective_stop_reason,
            usage=usage_body(cached, output_tokens),
        )
        headers = {"request-id": request_id}
        if not stream:
            return JSONResponse(message, headers=headers)
        error = None
        if breaks_off and fault is not None:
            error_type = fault.error_type or "overloaded_error"
            error = error_body(error_type, fault.message, request_id)

        async def events() -> AsyncIterator[bytes]:
            for event in stream_events(message, chunk_chars=self.state.chunk_chars, error=error):
                yield event

        headers["cache-control"] = "no-cache"
        return StreamingResponse(events(), media_type="text/event-stream", headers=headers)

    async def _count_tokens(self, request: Request) -> Response:
        body, _, early = await self._preflight(request, "count_tokens")
        if early is not None:
            return early
        problems: list[str] = []
        if isinstance(body, Mapping):
            extra = sorted(set(body) - _COUNT_TOKENS_FIELDS)
            problems += [f"{name}: Extra inputs are not permitted" for name in extra]
            # count_tokens takes no max_tokens; give the shared checker one so it judges the rest.
            problems += validate_request({**body, "max_tokens": 1})
        else:
            problems += validate_request(body)
        if problems:
            self._record(request, "count_tokens", body, 400, problems=tuple(problems))
            return self._error(400, "; ".join(problems))
        if (missing := self._model_problem(body)) is not None:
            self._record(request, "count_tokens", body, 404)
            return missing
        self._record(request, "count_tokens", body, 200)
        return JSONResponse({"input_tokens": estimate_payload_tokens(body)})

    async def _model_info(self, request: Request) -> Response:
        _, _, early = await self._preflight(request, "models")
        if early is not None:
            return early
        model_id = request.path_params["model_id"]
        card = self.state.models.get(model_id)
        if card is None:
            self._record(request, "models", None, 404)
            return self._error(404, f"model: {model_id}")
        self._record(request, "models", None, 200)
        return JSONResponse(card.info(), headers={"request-id": self._request_id()})
