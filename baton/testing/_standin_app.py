"""The Messages API stand-in's request handling: checks, faults, replies, records.

`StandInApp` turns requests into the API's answers, reading and updating the `StandInState`
it shares with the public `MessagesAPIStandIn` (see `baton.testing` for the behaviour).
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from baton.context.server_edits import (
    ServerTurn,
    edit_problems,
    play_turn,
    server_view,
    since_compaction,
    uses_server_edits,
)
from baton.context.tokens import estimate_payload_tokens
from baton.context.validation import validate_request
from baton.models.protocol import CallContext
from baton.models.rules import request_problems, thinks
from baton.models.scripted import ScriptedResponse
from baton.testing._standin_context import (
    beta_names,
    compaction_problems,
    issue_reply,
    iterations_usage,
    reply_from_model,
    sealer,
)
from baton.testing._standin_models import StandInModel, models_page
from baton.testing._standin_state import Endpoint, Fault, RecordedRequest, StandInState
from baton.testing._standin_thinking import (
    BlockReview,
    output_tokens,
    review_blocks,
    tool_loop_problems,
)
from baton.testing._standin_wire import (
    error_body,
    error_type_for,
    message_body,
    stream_events,
    usage_body,
)

_SECRET_HEADERS = frozenset({"x-api-key", "authorization"})
_COUNT_TOKENS_FIELDS = frozenset(
    {"messages", "model", "system", "tools", "tool_choice", "thinking", "cache_control"}
    | {"output_config", "speed", "mcp_servers", "context_management"}
)


class StandInApp:
    """The ASGI app: `/v1/messages`, `/v1/messages/count_tokens`, `/v1/models[/{id}]`."""

    def __init__(self, state: StandInState) -> None:
        self.state = state
        self.asgi = Starlette(
            routes=[
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
                Route("/v1/models", self._model_list, methods=["GET"]),
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

    def _card(
        self, request: Request, endpoint: Endpoint, body: Any, problems: list[str]
    ) -> StandInModel | Response:
        """The model a request is for, or the answer to a request that cannot be served: a
        400 listing `problems`, else a 404 for an unknown or retired model (recorded)."""
        if problems:
            self._record(request, endpoint, body, 400, problems=tuple(problems))
            return self._error(400, "; ".join(problems))
        model = body["model"]
        card = self.state.models.get(model)
        if card is None or card.lifecycle == "retired":
            self._record(request, endpoint, body, 404)
            return self._error(404, f"model: {model}" if card is None else card.retired_message())
        return card

    def _review(self, body: Mapping[str, Any], card: StandInModel, request: Request) -> BlockReview:
        """The model's own rules, the context edits and the thinking blocks: problems, and
        what the model sees (from the latest compaction block on, where the server reads)."""
        trimmed = {**body, "messages": since_compaction(body["messages"])}
        review = review_blocks(trimmed, card.id, self.state.signer)
        betas = beta_names(request.headers)
        review.problems = (
            request_problems(body, card.rules)
            + edit_problems(body, betas, thinks=thinks(body, card.rules))
            + compaction_problems(body["messages"], self.state.signer)
            + review.problems
            + tool_loop_problems(trimmed["messages"], self.state.issued)
        )
        return review

    async def _messages(self, request: Request) -> Response:
        body, fault, early = await self._preflight(request, "messages")
        if early is not None:
            return early
        problems = validate_request(body)
        stream = isinstance(body, Mapping) and body.get("stream") is True
        if isinstance(body, Mapping) and not isinstance(body.get("stream", False), bool):
            problems.append("stream: Input should be a valid boolean")
        card = self._card(request, "messages", body, problems)
        if isinstance(card, Response):
            return card
        if body["max_tokens"] > card.max_tokens:
            message = (
                f"max_tokens: {body['max_tokens']} > {card.max_tokens}, which is the maximum "
                f"allowed number of output tokens for {card.id}"
            )
            self._record(request, "messages", body, 400, problems=(message,))
            return self._error(400, message)
        review = self._review(body, card, request)
        dropped = tuple(review.dropped)
        if review.problems:
            refused = tuple(review.problems)
            self._record(request, "messages", body, 400, problems=refused, dropped_blocks=dropped)
            return self._error(400, "; ".join(refused))
        seen = {**body, "messages": review.messages}
        view = server_view(seen, count=card.tokens)  # cleared before it is counted
        tokens = view.input_tokens
        window = self.state.context_window or card.max_input_tokens
        if tokens > window:
            message = f"prompt is too long: {tokens} tokens > {window} maximum"
            self._record(request, "messages", body, 400, problems=(message,))
            return self._error(400, message)
        label = fault.describe() if fault is not None else None
        if fault is not None and fault.mid_stream and not stream:
            self._record(request, "messages", body, 529, fault=label)
            return self._error(529, fault.message, error_type=fault.error_type)
        self._record(
            request, "messages", body, 200, stream=stream, fault=label, dropped_blocks=dropped
        )
        call = CallContext.from_headers(request.headers)
        turn = play_turn(
            seen,
            view,
            cache=self.state.cache,
            namespace=card.id,
            count=card.tokens,
            cached=card.cache_usage,
            seal=sealer(self.state.signer, card.id),
        )
        return await self._answer(turn, review, stream, fault, call)

    async def _answer(
        self,
        turn: ServerTurn,
        review: BlockReview,
        stream: bool,
        fault: Fault | None,
        call: CallContext | None = None,
    ) -> Response:
        state = self.state
        body = turn.body  # what the model answers from
        card = state.models[body["model"]]
        state.in_flight += 1
        state.max_in_flight = max(state.max_in_flight, state.in_flight)
        self.state.notify()
        try:
            if self.state.gate is not None:
                await self.state.gate.wait()
            breaks_off = fault is not None and fault.mid_stream
            reply: ScriptedResponse | None = None
            if turn.pause:
                pass  # the server answers with its compaction alone: no reply is used
            elif state.replies:
                # A stream that breaks off never delivered its reply: keep it for the retry.
                reply = state.replies[0] if breaks_off else state.replies.popleft()
            elif self.state.model is not None:
                reply = await reply_from_model(self.state.model, body, call)
            else:
                reply = ScriptedResponse.model_validate(self.state.policy(body))
        finally:
            state.in_flight -= 1
            self.state.notify()
        request_id = self._request_id()
        if reply is None:
            assert turn.compaction is not None, "only a compaction pause has no reply"
            content, stop_reason = [dict(turn.compaction)], "compaction"
            usage = iterations_usage(turn, None)
        else:
            content = issue_reply(state, reply.to_content(f"toolu_{request_id}"), review, turn)
            cached = card.cache_usage(state.cache.usage_for(body, namespace=card.id))
            total, thinking = output_tokens([b for b in content if b["type"] != "compaction"])
            usage = iterations_usage(turn, usage_body(cached, total, thinking or None))
            stop_reason = reply.effective_stop_reason
        message = message_body(
            message_id=f"msg_{request_id}",
            model=card.id,
            content=content,
            stop_reason=stop_reason,
            usage=usage,
            context_management=turn.context_management,
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
        card = self._card(request, "count_tokens", body, problems)
        if isinstance(card, Response):
            return card
        review = self._review(body, card, request)
        dropped = tuple(review.dropped)
        if review.problems:
            refused = tuple(review.problems)
            self._record(
                request, "count_tokens", body, 400, problems=refused, dropped_blocks=dropped
            )
            return self._error(400, "; ".join(refused))
        self._record(request, "count_tokens", body, 200, dropped_blocks=dropped)
        seen = {**body, "messages": review.messages}
        answer: dict[str, Any] = {"input_tokens": server_view(seen, count=card.tokens).input_tokens}
        if uses_server_edits(body):
            original = card.tokens(estimate_payload_tokens(seen))
            answer["context_management"] = {"original_input_tokens": original}
        return JSONResponse(answer)

    async def _model_list(self, request: Request) -> Response:
        _, _, early = await self._preflight(request, "models")
        if early is not None:
            return early
        page = models_page(list(self.state.models.values()), request.query_params)
        if isinstance(page, str):
            self._record(request, "models", None, 400, problems=(page,))
            return self._error(400, page)
        self._record(request, "models", None, 200)
        return JSONResponse(page, headers={"request-id": self._request_id()})

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
