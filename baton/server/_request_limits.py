"""What one request may cost the control API: its body's size, its JSON's depth, its time.

The control API reads every body whole before validating it, so without bounds one client
could hold the runtime's memory (a huge body), its stack (deeply nested JSON) or a connection
for ever (a request that never finishes). `RequestGuard` bounds the body after the headers
(413, 422, 408); `header_deadline` gives uvicorn's HTTP protocol a deadline for the headers
themselves, which no ASGI app sees until they are complete. Both take their limits from
`[server]` in `baton.toml` (docs/architecture.md, "server/").
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping

import anyio
import h11
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from baton.runtime._error_wire import ErrorBody, ErrorDetail
from baton.server._control_models import utf8_safe
from baton.server._json_shape import json_shape
from baton.server.errors import ControlRequestError

MAX_JSON_DEPTH = 100
"""Arrays and objects nested deeper than this are refused before they are parsed: parsing and
validating recurse once per level, and a few hundred levels exhaust the stack."""

MAX_JSON_VALUES = 50_000
"""A body holding more values (object keys included) than this is refused before it is
parsed: each is an object built while the interpreter lock is held, so 8 MB of tiny values
would stop every actor for most of a second (docs/architecture.md, "What a request body may
cost")."""

INLINE_CHECK_BYTES = 64 * 1024
"""A body up to this size is checked on the event loop (well under a millisecond); a larger
one on a worker thread, whose passes each hand the interpreter back."""


def error_response(
    status: int, detail: ErrorDetail, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """`{"error": {"type", "message", "details"}}` with `status`, as every error is sent."""
    body = utf8_safe(ErrorBody(error=detail).model_dump(mode="json"))
    return JSONResponse(body, status_code=status, headers=headers)


def request_error(
    status: int, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """The response to a request the API cannot take as sent (a `ControlRequestError`)."""
    return error_response(
        status, ErrorDetail(type=ControlRequestError.__name__, message=message), headers
    )


def body_problem(body: bytes) -> str | None:
    """Why the JSON text `body` is refused before it is parsed (not UTF-8, too many values,
    nested too deep), or None. Linear in its size; blocking for a large body, so the guard
    runs it on a worker thread then."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return (
            f"the body is not UTF-8 text (byte 0x{body[exc.start]:02x} at offset "
            f"{exc.start}), so not JSON — send it encoded as UTF-8"
        )
    shape = json_shape(body, max_values=MAX_JSON_VALUES)
    if shape.depth is None:
        return (
            f"the JSON body holds {shape.values:,} values and keys; at most "
            f"{MAX_JSON_VALUES:,} are "
            "accepted — put bulk data in a file in the workspace and send its path"
        )
    if shape.depth > MAX_JSON_DEPTH:
        return (
            f"the JSON body is nested {shape.depth} levels deep; at most {MAX_JSON_DEPTH} are "
            "accepted — flatten it"
        )
    return None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def is_json_type(content_type: str) -> bool:
    """Whether a `Content-Type` value is JSON (`application/json`, `application/*+json`)."""
    mime = content_type.split(";", 1)[0].strip().lower()
    return mime == "application/json" or (
        mime.startswith("application/") and mime.endswith("+json")
    )


class RequestGuard:
    """Reads each request's body before the app does, within bounds:

    - larger than `max_body_bytes` (by `Content-Length`, or once that much has arrived): 413;
    - not all there `timeout` seconds after the headers: 408, and the connection is closed;
    - sent without `Content-Type: application/json`: 415 (every body the API takes is JSON);
    - not UTF-8, JSON holding more than `MAX_JSON_VALUES` values or nested deeper than
      `MAX_JSON_DEPTH`: 422, judged in time linear in the body's size and, for a body over
      `INLINE_CHECK_BYTES`, on a worker thread.

    The app then gets the body in one piece, and later `receive` calls (a disconnect) as sent.
    """

    def __init__(self, app: ASGIApp, *, max_body_bytes: int, timeout: float) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = (_header(scope, b"content-length") or "").strip()
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._too_large(scope, receive, send)
            return
        body = bytearray()
        with anyio.move_on_after(self.timeout) as deadline:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return  # the client left: nobody to answer
                body += message.get("body", b"")
                if len(body) > self.max_body_bytes:
                    await self._too_large(scope, receive, send)
                    return
                if not message.get("more_body", False):
                    break
        if deadline.cancelled_caught:
            late = (
                f"the request body did not arrive within {self.timeout:g}s of its headers — "
                "send the whole body at once (`[server] request_timeout` in baton.toml)"
            )
            await request_error(408, late, {"connection": "close"})(scope, receive, send)
            return
        refusal = await self._refusal(scope, bytes(body))
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, _replay(bytes(body), receive), send)

    async def _refusal(self, scope: Scope, body: bytes) -> JSONResponse | None:
        if not body:
            return None
        content_type = _header(scope, b"content-type")
        if content_type is None or not is_json_type(content_type):
            sent = "without a Content-Type" if content_type is None else f"as {content_type!r}"
            return request_error(
                415,
                f"the body is sent {sent}; every body this API takes is JSON — send it with "
                "`Content-Type: application/json`",
            )
        if len(body) <= INLINE_CHECK_BYTES:
            problem = body_problem(body)
        else:
            problem = await anyio.to_thread.run_sync(body_problem, body)
        return None if problem is None else request_error(422, problem)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = (
            f"the request body is larger than {self.max_body_bytes:,} bytes — send less, or "
            "raise `[server] max_body_bytes` in baton.toml"
        )
        # The rest of the body is left unread: the server discards it, it is never held.
        await request_error(413, message)(scope, receive, send)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands out the body read already, then whatever the client sends."""
    pending = True

    async def replay() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _timeout_response(timeout: float) -> bytes:
    message = (
        f"the request headers did not arrive within {timeout:g}s — send the whole request "
        "at once (`[server] request_timeout` in baton.toml)"
    )
    detail = ErrorDetail(type=ControlRequestError.__name__, message=message)
    body = json.dumps(ErrorBody(error=detail).model_dump(mode="json")).encode()
    head = (
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("latin-1") + body


def header_deadline(timeout: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol, closing a connection whose request headers take longer than
    `timeout` seconds (after a 408): from the connection's start, or from the first byte of
    a next request on a kept-alive one (between requests, uvicorn's keep-alive timeout
    applies)."""
    response = _timeout_response(timeout)

    class HeaderDeadline(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._watch_headers()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._watch_headers()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_watching()
            super().connection_lost(exc)

        def _watch_headers(self) -> None:
            # h11 leaves IDLE for the client's side once a request's headers are complete.
            waiting = self.conn.their_state is h11.IDLE and not self.transport.is_closing()
            if waiting and self._header_timer is None:
                self._header_timer = self.loop.call_later(timeout, self._headers_too_slow)
            elif not waiting:
                self._stop_watching()

        def _stop_watching(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.write(response)
                self.transport.close()

    return HeaderDeadline
