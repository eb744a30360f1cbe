"""The control API over the workspace's Unix socket with the standard library alone, one
blocking request at a time: how `baton tell` and `baton ask` reach the runtime, so that they
start without anyio, pydantic, httpx2 or the error tree (docs/architecture.md, "What a
command imports").

What a user sees is what the async `Client` (the Python API) makes of the same answers:
both build their requests, word their failures (`_control_requests`) and read an error body
(`baton.runtime._error_body`) with the same functions, and the wire checks the runtime's
health on connecting, as the client does.
"""

from __future__ import annotations

import codecs
import http.client
import json
import os
import socket
import struct
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import quote

from baton._no_runtime import no_runtime_message
from baton.runtime._error_body import error_fields, unexpected_body
from baton.server._control_requests import (
    DEFAULT_TIMEOUT,
    broken_message,
    timeout_message,
    unsendable_message,
)
from baton.server._workspace_files import CONTROL_SOCKET

# The error classes whose message `baton` prints with exit 2 (a `CommandLineError`) when the
# runtime answers with one; names, as the error tree is not loaded here
# (tests/server/test_wire.py holds them to `baton.errors`).
COMMAND_LINE_ERRORS = frozenset({"CommandLineError"})

# How `baton tell` and `baton ask` named these failures when they went through the async
# client (httpx2's exception, as `Client` words it), kept so that their line is unchanged.
_CONNECT_TIMEOUT = "ConnectTimeout('')"
_WRITE_TIMEOUT = "WriteTimeout('')"
_READ_TIMEOUT = "ReadTimeout('')"
_DISCONNECTED = "RemoteProtocolError('Server disconnected without sending a response.')"


class WireError(Exception):
    """Raised when a request of the wire, or the command line it serves, fails: `message` is
    the line to print, `usage` whether the command line itself was wrong (exit 2) rather than
    the runtime's answer or its absence (exit 1).

    Not a `BatonError`: the error tree loads pydantic, which the commands using the wire must
    not (see the module's docstring)."""

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage


class _UnixConnection(http.client.HTTPConnection):
    """HTTP/1.1 to `Host: baton` (as the client's base URL names it) over a Unix socket."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("baton", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            # A runtime too busy to take the connection (its listen backlog full) is waited
            # for up to the timeout, as the async client does: a blocking connect, which the
            # kernel gives up (EAGAIN) after the send timeout.
            seconds = self.timeout or 0.0
            whole = int(seconds)
            timeval = struct.pack("ll", whole, int((seconds - whole) * 1_000_000))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeval)
            sock.connect(self._path)
            sock.settimeout(self.timeout)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


class ControlWire:
    """The control API of the runtime in `workspace` over one connection; use it as `with`.
    `timeout` is how long it waits on the runtime for anything but a reply it was told to
    wait longer for (the client's `timeout`)."""

    def __init__(self, workspace: str | Path, *, timeout: float | None = None) -> None:
        self.workspace = Path(workspace)
        self.timeout = DEFAULT_TIMEOUT if timeout is None else timeout
        socket_path = os.fspath(self.workspace / CONTROL_SOCKET)
        self._connection = _UnixConnection(socket_path, self.timeout)

    def __enter__(self) -> Self:
        try:
            self._connection.connect()
        except BlockingIOError:  # the runtime took no connection in time (see `connect`)
            raise WireError(timeout_message(self.workspace, _CONNECT_TIMEOUT)) from None
        except OSError:
            # No socket, a stale one nobody listens on, or one that may not be opened.
            raise WireError(no_runtime_message(self.workspace)) from None
        try:
            self.request("GET", "/health")
        except BaseException:
            self._connection.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._connection.close()

    def request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> Any:
        """The decoded answer to `method path` (`path` as it reads, unquoted) with `body` as
        JSON, waiting up to `timeout` (default: the wire's); a `WireError` saying what went
        wrong if there is none or it is an error."""
        target = _target(method, path)
        headers = {}
        content = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            content = _json_bytes(method, path, body)
        wait = self.timeout if timeout is None else timeout
        self._connection.timeout = wait
        if self._connection.sock is not None:
            self._connection.sock.settimeout(wait)
        sent = False
        try:
            self._connection.request(method, target, body=content, headers=headers)
            sent = True
            response = self._connection.getresponse()
            data = response.read()
        except TimeoutError:
            cause = _READ_TIMEOUT if sent else _WRITE_TIMEOUT
            raise self._failure(timeout_message, cause) from None
        except (http.client.RemoteDisconnected, ConnectionError):
            # Closed or reset before the answer came: the same to a user, however the
            # socket reported it.
            raise self._failure(broken_message, _DISCONNECTED) from None
        except (OSError, http.client.HTTPException) as exc:
            raise self._failure(broken_message, repr(exc)) from None
        decoded = _decoded(response, data)
        if response.status >= 400:
            raise _answered_error(response.status, decoded)
        return decoded

    def _failure(self, words: Callable[[Path, str], str], cause: str) -> WireError:
        # What is left of a request that failed half-way cannot carry another.
        self._connection.close()
        return WireError(words(self.workspace, cause))


def _target(method: str, path: str) -> str:
    # Each part percent-encoded whole: an actor's name reaches the runtime as written, and a
    # valid one (letters, digits, `_ . - :`) as the client sends it.
    try:
        return quote(path, safe="/:")
    except UnicodeEncodeError:
        bad = next(char for char in path if not _encodable(char))
        raise WireError(unsendable_message(method, path, bad)) from None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _json_bytes(method: str, path: str, body: dict[str, Any]) -> bytes:
    # As httpx2 encodes `json=`: compact, UTF-8 and no NaN, so a request is the client's.
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise WireError(unsendable_message(method, path, exc.object[exc.start : exc.end])) from None


def _decoded(response: http.client.HTTPResponse, data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        charset = response.headers.get_content_charset() or "utf-8"
        try:
            codecs.lookup(charset)
        except LookupError:
            charset = "utf-8"
        return data.decode(charset, errors="replace")


def _answered_error(status: int, body: Any) -> WireError:
    fields = error_fields(body)
    if fields is None:
        return WireError(unexpected_body(status, body))
    return WireError(fields.message, usage=fields.type in COMMAND_LINE_ERRORS)
