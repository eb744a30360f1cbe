"""`MessagesAPIStandIn`: a local HTTP server the real `anthropic` SDK can talk to.

See `baton.testing` for how to use it. The server is uvicorn serving the Starlette app of
`baton.testing._standin_app` on a loopback socket bound before the server starts, inside the
stand-in's own task group; it runs on the asyncio backend, as uvicorn does.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Iterator, Mapping
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, Self

import anyio
import uvicorn
from anyio.abc import TaskStatus

from baton.context.prompt_cache import PrefixCache
from baton.models.anthropic import AnthropicModel
from baton.models.protocol import Model
from baton.models.scripted import ScriptedResponse
from baton.server.embedded_uvicorn import EmbeddedUvicorn
from baton.testing._standin_app import StandInApp
from baton.testing._standin_models import DEFAULT_MODELS, StandInModel
from baton.testing._standin_state import (
    FAST_RETRY_AFTER,
    Endpoint,
    Fault,
    RecordedRequest,
    StandInPolicy,
    StandInState,
    default_standin_policy,
)

DEFAULT_API_KEY = "sk-ant-standin-test-key"
_HOST = "127.0.0.1"


class MessagesAPIStandIn:
    """A local Messages API for tests, used as `async with MessagesAPIStandIn() as api:`."""

    def __init__(
        self,
        *,
        api_key: str | None = DEFAULT_API_KEY,
        models: Mapping[str, StandInModel] | None = None,
        context_window: int | None = None,
        policy: StandInPolicy | None = None,
        model: Model | None = None,
        min_cache_tokens: int = 1024,
        chunk_chars: int = 24,
        redacted_thinking_every: int = 0,
    ) -> None:
        """`model`, when given, answers every request not served from the reply queue, under
        the `CallContext` the request's `x-baton-*` headers describe: a baton client talking
        to this stand-in then gets exactly what that model would have said in-process.
        `redacted_thinking_every=N` adds a `redacted_thinking` block to every Nth reply that
        thinks (0: never)."""
        if redacted_thinking_every < 0:
            raise ValueError("redacted_thinking_every must be 0 (never) or a positive count")
        self.state = StandInState(
            api_key=api_key,
            models=dict(DEFAULT_MODELS if models is None else models),
            context_window=context_window,
            policy=policy or default_standin_policy,
            model=model,
            cache=PrefixCache(min_tokens=min_cache_tokens),
            chunk_chars=chunk_chars,
            redacted_thinking_every=redacted_thinking_every,
        )
        self._app = StandInApp(self.state)
        self._port: int | None = None
        self._stack: AsyncExitStack | None = None

    @property
    def api_key(self) -> str | None:
        """The key requests must carry (None: any non-empty key)."""
        return self.state.api_key

    @property
    def models(self) -> dict[str, StandInModel]:
        """The Models API table, by id; edit it to add or retire models."""
        return self.state.models

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received, in arrival order, keys redacted."""
        return self.state.requests

    @property
    def cache(self) -> PrefixCache:
        """The prompt-cache simulation behind the usage figures."""
        return self.state.cache

    @property
    def context_window(self) -> int | None:
        """Prompts above this many tokens fail as too long (None: the model's window)."""
        return self.state.context_window

    @context_window.setter
    def context_window(self, value: int | None) -> None:
        self.state.context_window = value

    # --- lifetime -----------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        async with AsyncExitStack() as stack:
            task_group = await stack.enter_async_context(anyio.create_task_group())
            self._port = await task_group.start(self._serve)
            stack.callback(self._close)  # runs first on exit: uvicorn shuts down
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._stack is not None, "the stand-in was not entered"
        await self._stack.__aexit__(exc_type, exc, tb)

    def _close(self) -> None:
        self.state.stop.set()
        if self.state.gate is not None:
            self.state.gate.set()  # a reply still held must not keep the server from stopping

    async def _serve(self, *, task_status: TaskStatus[int]) -> None:
        # Bound and listening before uvicorn starts, so the port is known and no early
        # connection is refused.
        sock = socket.create_server((_HOST, 0))
        port: int = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app.asgi,
            http="h11",
            lifespan="off",
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=1,
        )
        server = EmbeddedUvicorn(config, self.state.stop, lambda: task_status.started(port))
        await server.serve(sockets=[sock])

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>`, for `ANTHROPIC_BASE_URL` or `base_url=`."""
        if self._port is None:
            raise RuntimeError("enter the stand-in (`async with`) before asking for its URL")
        return f"http://{_HOST}:{self._port}"

    def env(self) -> dict[str, str]:
        """`ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY` pointing at this stand-in."""
        return {"ANTHROPIC_BASE_URL": self.base_url, "ANTHROPIC_API_KEY": self._key()}

    def model(self, name: str = "claude-opus-5-5", **options: Any) -> AnthropicModel:
        """An `AnthropicModel` talking to this stand-in (use it as `async with`)."""
        return AnthropicModel(name, api_key=self._key(), base_url=self.base_url, **options)

    def _key(self) -> str:
        return self.state.api_key or DEFAULT_API_KEY

    # --- scripting ----------------------------------------------------------------------

    def reply(self, *responses: ScriptedResponse | str | Mapping[str, Any]) -> None:
        """Queue replies for the next valid `/v1/messages` requests, in order."""
        for response in responses:
            self.state.replies.append(ScriptedResponse.model_validate(response))

    def inject(self, fault: Fault, times: int = 1) -> None:
        """Queue `fault` for the next `times` requests to its endpoint."""
        self.state.faults.extend([fault] * times)

    def fail(
        self,
        status: int,
        *,
        times: int = 1,
        error_type: str | None = None,
        message: str | None = None,
        retry_after: float | None = FAST_RETRY_AFTER,
        endpoint: Endpoint = "messages",
    ) -> None:
        """Answer the next `times` requests with HTTP `status` and the API's error body."""
        fault = Fault(
            endpoint=endpoint,
            status=status,
            error_type=error_type,
            message=message,
            retry_after=retry_after,
        )
        self.inject(fault, times)

    def fail_mid_stream(self, *, times: int = 1, error_type: str = "overloaded_error") -> None:
        """Break off the next `times` streams with an `error` event after they started."""
        self.inject(Fault(error_type=error_type, mid_stream=True), times)

    def delay(self, seconds: float, *, times: int = 1, endpoint: Endpoint = "messages") -> None:
        """Hold the next `times` requests for `seconds` before answering them normally."""
        self.inject(Fault(endpoint=endpoint, delay=seconds), times)

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Keep `/v1/messages` replies waiting until the block ends (to observe concurrency)."""
        gate = self.state.gate = anyio.Event()
        try:
            yield
        finally:
            gate.set()
            self.state.gate = None

    @property
    def in_flight(self) -> int:
        """`/v1/messages` requests being answered right now."""
        return self.state.in_flight

    @property
    def max_in_flight(self) -> int:
        """The most `/v1/messages` requests ever answered at once."""
        return self.state.max_in_flight

    async def wait_in_flight(self, count: int, timeout: float = 5.0) -> None:
        """Wait until at least `count` requests are in flight; `TimeoutError` after `timeout`."""
        await self.wait_until(lambda: self.state.in_flight >= count, timeout)

    async def wait_until(self, condition: Callable[[], bool], timeout: float = 5.0) -> None:
        """Wait until `condition()` holds, checked again each time a `/v1/messages` request
        starts or finishes being answered; `TimeoutError` after `timeout`."""
        with anyio.fail_after(timeout):
            while not condition():
                await self.state.changed.wait()

    def requests_to(self, endpoint: Endpoint) -> list[RecordedRequest]:
        """The recorded requests to one endpoint, in arrival order."""
        return [r for r in self.requests if r.endpoint == endpoint]
