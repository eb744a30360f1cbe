"""`baton.connect(workspace)`: an async client of a running `baton run` process.

    async with baton.connect("path/to/workspace") as client:
        await client.tell("greeter", Hello(name="a"))
        reply = await client.ask("greeter", Hello(name="b"), reply_type=Greeting)
        async for record in client.tail(follow=True, event="model.call"):
            ...

It speaks HTTP over the workspace's control socket. An error response is raised as the
baton error the runtime raised (`UnknownActorError`, `AskTimeoutError`, ...).
"""

from __future__ import annotations

import json
import os
import ssl
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar, overload
from urllib.parse import quote

import anyio
import httpx2
from pydantic import BaseModel

from baton.errors import BatonError, RuntimeFailure, UsageError
from baton.mailboxes.errors import InvalidMessageError
from baton.memory import MemoryEntry
from baton.runtime._error_wire import rebuild_error
from baton.runtime.ref import DEFAULT_ASK_TIMEOUT
from baton.server._control_models import AskReply, Health
from baton.server._control_requests import (
    DEFAULT_TIMEOUT,
    ask_wait,
    broken_message,
    message_body,
    not_unicode,
    not_unicode_message,
    tell_wait,
    timeout_message,
    unsendable_message,
)
from baton.server._dead_letter_models import DEFAULT_LIMIT as DEFAULT_DEAD_LETTERS
from baton.server._dead_letter_models import DeadLetterList
from baton.server._memory_models import DEFAULT_SEARCH_LIMIT, MemoryListing, MemorySearch
from baton.server._workspace_files import CONTROL_SOCKET, PID_FILE, read_pid
from baton.server.errors import NoRuntimeError

if TYPE_CHECKING:
    from baton.pipeline.scenario_state import ScenarioState
    from baton.server._status_models import StatusReport

M = TypeVar("M", bound=BaseModel)

STOP_TIMEOUT = 60.0
_STOP_POLL = 0.05


def _scenario(raw: Any) -> ScenarioState:
    # Imported on use, as the scenario's and the status' shapes are: they live with the
    # pipeline's messages, which `baton tell` and `baton ask` must not load
    # (docs/architecture.md, "What a command imports").
    from baton.pipeline.scenario_state import ScenarioState  # noqa: PLC0415

    return ScenarioState.model_validate(raw)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Client:
    """A connection to the runtime of one workspace; use it as `async with`."""

    def __init__(self, workspace: str | Path = ".", *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.workspace = Path(workspace)
        self.socket_path = self.workspace / CONTROL_SOCKET
        self._timeout = timeout
        self._http: httpx2.AsyncClient | None = None

    async def __aenter__(self) -> Self:
        # Plain HTTP over a Unix socket: a TLS context that trusts no certificate, instead of
        # the default one, whose CA bundle takes 40 ms of every command's start to load.
        no_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        self._http = httpx2.AsyncClient(
            transport=httpx2.AsyncHTTPTransport(uds=os.fspath(self.socket_path), verify=no_tls),
            base_url="http://baton",
            timeout=self._timeout,
        )
        try:
            await self.health()
        except BaseException:
            await self._http.aclose()
            self._http = None
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    # --- requests --------------------------------------------------------------------------

    def _client(self) -> httpx2.AsyncClient:
        if self._http is None:
            raise UsageError("use the client inside `async with baton.connect(...) as client:`")
        return self._http

    def _transport_error(self, exc: httpx2.TransportError) -> BatonError:
        if isinstance(exc, httpx2.ConnectError):
            return NoRuntimeError(self.workspace)
        if isinstance(exc, httpx2.TimeoutException):
            return RuntimeFailure(timeout_message(self.workspace, repr(exc)))
        return RuntimeFailure(broken_message(self.workspace, repr(exc)))

    async def _request(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        params: Mapping[str, str | int | Sequence[str]] | None = None,
    ) -> Any:
        try:
            response = await self._client().request(
                method, path, json=body, params=params, timeout=timeout or self._timeout
            )
        except httpx2.TransportError as exc:
            raise self._transport_error(exc) from None
        except UnicodeEncodeError as exc:
            # A lone surrogate in a path or a body: no UTF-8 request can carry it.
            text = exc.object[exc.start : exc.end]
            raise UsageError(unsendable_message(method, path, text)) from None
        try:
            decoded = response.json()
        except ValueError:
            decoded = response.text
        if response.status_code >= 400:
            raise rebuild_error(response.status_code, decoded)
        return decoded

    @staticmethod
    def _message_body(
        message: BaseModel | str, payload: Mapping[str, Any] | None, timeout: float | None
    ) -> dict[str, Any]:
        if isinstance(message, BaseModel):
            if payload is not None:
                raise UsageError("pass either a message model or a type name with a payload")
            body = message_body(type(message).__name__, message.model_dump(mode="json"), timeout)
        else:
            body = message_body(message, payload, timeout)
        where = not_unicode(body["payload"])
        if where is not None:
            raise InvalidMessageError(not_unicode_message(body["type"], where))
        return body

    # --- the API ---------------------------------------------------------------------------

    async def health(self) -> Health:
        """Which process answers; `NoRuntimeError` if none does."""
        return Health.model_validate(await self._request("GET", "/health"))

    async def status(self) -> StatusReport:
        """Actors, context fill, scenarios, pending approvals and dead letters."""
        from baton.server._status_models import StatusReport  # noqa: PLC0415 - see _scenario

        return StatusReport.model_validate(await self._request("GET", "/status"))

    async def tell(
        self,
        actor: str,
        message: BaseModel | str,
        payload: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> None:
        """Queue `message` (a model, or a type name and its `payload`) for `actor`."""
        body = self._message_body(message, payload, timeout)
        wait = tell_wait(timeout, self._timeout)
        await self._request("POST", f"/actors/{actor}/tell", body=body, timeout=wait)

    @overload
    async def ask(
        self,
        actor: str,
        message: BaseModel | str,
        payload: Mapping[str, Any] | None = ...,
        *,
        timeout: float = ...,
        reply_type: type[M],
    ) -> M: ...

    @overload
    async def ask(
        self,
        actor: str,
        message: BaseModel | str,
        payload: Mapping[str, Any] | None = ...,
        *,
        timeout: float = ...,
        reply_type: None = ...,
    ) -> Any: ...

    async def ask(
        self,
        actor: str,
        message: BaseModel | str,
        payload: Mapping[str, Any] | None = None,
        *,
        timeout: float = DEFAULT_ASK_TIMEOUT,
        reply_type: type[BaseModel] | None = None,
    ) -> Any:
        """Ask `actor` and return its reply as JSON, or validated as `reply_type`."""
        body = self._message_body(message, payload, timeout)
        raw = await self._request(
            "POST", f"/actors/{actor}/ask", body=body, timeout=ask_wait(timeout)
        )
        reply = AskReply.model_validate(raw).reply
        return reply if reply_type is None else reply_type.model_validate(reply)

    async def submit(
        self,
        scenario: str,
        requirement: str | None = None,
        *,
        auto_approve: bool | None = None,
    ) -> ScenarioState:
        """Submit a scenario to the scheduler (`auto_approve` overrides its scenario.toml)."""
        body = {"scenario": scenario, "requirement": requirement, "auto_approve": auto_approve}
        return _scenario(await self._request("POST", "/scenarios", body=body))

    async def scenario(self, name: str) -> ScenarioState:
        """One scenario's state; `UnknownScenarioError` if the scheduler knows none."""
        return _scenario(await self._request("GET", f"/scenarios/{name}"))

    async def scenarios(self) -> list[ScenarioState]:
        """Every scenario the scheduler knows."""
        raw = await self._request("GET", "/scenarios")
        return [_scenario(item) for item in raw]

    async def approve(self, scenario: str) -> ScenarioState:
        """Approve the scenario's pending Init → Execute handoff."""
        return _scenario(await self._request("POST", f"/scenarios/{scenario}/approve"))

    async def reject(self, scenario: str, reason: str) -> ScenarioState:
        """Reject the pending handoff, with the reason Init gets back."""
        raw = await self._request("POST", f"/scenarios/{scenario}/reject", body={"reason": reason})
        return _scenario(raw)

    async def dead_letters(self, limit: int = DEFAULT_DEAD_LETTERS) -> DeadLetterList:
        """The newest `limit` dead letters (newest last) and how many there were in all."""
        raw = await self._request("GET", "/dead-letters", params={"limit": limit})
        return DeadLetterList.model_validate(raw)

    async def memory_list(self, tags: Sequence[str] = ()) -> MemoryListing:
        """Every long-term memory entry having all of `tags`, oldest first."""
        raw = await self._request("GET", "/memory", params={"tag": list(tags)})
        return MemoryListing.model_validate(raw)

    async def memory_search(
        self, query: str, *, tags: Sequence[str] = (), limit: int = DEFAULT_SEARCH_LIMIT
    ) -> MemorySearch:
        """The entries most relevant to `query` having all of `tags`, best first."""
        params: dict[str, str | int | Sequence[str]] = {
            "q": query,
            "limit": limit,
            "tag": list(tags),
        }
        raw = await self._request("GET", "/memory/search", params=params)
        return MemorySearch.model_validate(raw)

    async def memory_forget(self, entry_id: str) -> MemoryEntry:
        """Forget one entry and return it; `UnknownMemoryError` when there is none."""
        raw = await self._request("DELETE", f"/memory/{quote(entry_id, safe='')}")
        return MemoryEntry.model_validate(raw)

    async def stop(self, *, wait: bool = True, timeout: float = STOP_TIMEOUT) -> None:
        """Ask the runtime to drain and exit; with `wait`, return once its process is gone."""
        pid = (await self.health()).pid
        await self._request("POST", "/stop")
        if not wait:
            return
        pid_file = self.workspace / PID_FILE
        with anyio.move_on_after(timeout):
            # Another process: nothing to wait on but its pid file and its pid.
            while read_pid(pid_file) == pid and _pid_alive(pid):  # noqa: ASYNC110
                await anyio.sleep(_STOP_POLL)
            return
        raise RuntimeFailure(
            f"the runtime (pid {pid}) is still stopping after {timeout:g}s — wait, or end it "
            f"with `kill {pid}`"
        )

    async def tail(
        self, *, follow: bool = False, actor: str | None = None, event: str | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """Token-log records: the current file's, or with `follow` new ones as they come.

        `event` matches an event name or its family (`handoff` matches `handoff.sent`).
        """
        params = {"follow": "true" if follow else "false"}
        if actor is not None:
            params["actor"] = actor
        if event is not None:
            params["event"] = event
        timeout = httpx2.Timeout(self._timeout, read=None if follow else self._timeout)
        try:
            async with self._client().stream(
                "GET", "/tokens", params=params, timeout=timeout
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise rebuild_error(response.status_code, response.json())
                async for line in response.aiter_lines():
                    if line.strip():
                        yield json.loads(line)
        except httpx2.TransportError as exc:
            raise self._transport_error(exc) from None


def connect(workspace: str | Path = ".", *, timeout: float = DEFAULT_TIMEOUT) -> Client:
    """A client of the runtime running in `workspace`; use it as `async with`."""
    return Client(workspace, timeout=timeout)
