"""`EmbeddedUvicorn`: uvicorn run inside a process that owns its own lifetime.

Both servers baton starts inside a larger program use it: the control API inside `baton run`
(docs/architecture.md, "server/"), and the Messages API stand-in inside a test process.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Iterator

import anyio
import uvicorn


class EmbeddedUvicorn(uvicorn.Server):
    """uvicorn, told when to stop by an event and leaving the host process's signals alone.

    `started` is called once it listens (a task group's `task_status.started`, say).
    """

    def __init__(
        self, config: uvicorn.Config, stop: anyio.Event, started: Callable[[], None]
    ) -> None:
        super().__init__(config)
        self._stop = stop
        self._started = started

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # SIGINT/SIGTERM belong to the host: `baton run` drains the runtime on them, and in a
        # test process Ctrl+C is the test runner's.
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self._started()

    async def main_loop(self) -> None:
        await self.on_tick(0)  # sets the Date header once
        await self._stop.wait()
