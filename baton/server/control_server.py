"""`ControlServer`: the control API served over `<workspace>/.baton/control.sock` (0600)."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import uvicorn
from anyio.abc import TaskStatus

from baton._log import get_logger
from baton.errors import UsageError
from baton.runtime.runtime import Runtime
from baton.server._request_limits import header_deadline
from baton.server._workspace_claim import WorkspaceClaim, claim_workspace
from baton.server.control_api import create_control_app
from baton.server.embedded_uvicorn import EmbeddedUvicorn

log = get_logger(__name__)

GRACEFUL_TIMEOUT = 5


def _bind(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(os.fspath(path))
        # Nobody can connect before listen(), which uvicorn calls: restricting the mode
        # between bind and listen leaves no window in which the socket is open to others.
        os.chmod(path, 0o600)
    except BaseException:
        sock.close()
        raise
    return sock


class ControlServer:
    """The control API of one runtime, for the duration of `ControlServer.open(runtime)`."""

    def __init__(self, runtime: Runtime, claim: WorkspaceClaim) -> None:
        self.runtime = runtime
        self.claim = claim
        self.stop_requested = anyio.Event()
        self._closing = anyio.Event()
        self._stopped = anyio.Event()

    @property
    def socket_path(self) -> Path:
        return self.claim.socket_path

    @property
    def pid_file(self) -> Path:
        return self.claim.pid_file

    @classmethod
    @asynccontextmanager
    async def open(
        cls, runtime: Runtime, *, claim: WorkspaceClaim | None = None
    ) -> AsyncIterator[ControlServer]:
        """Serve the control API of `runtime` until the block ends.

        The workspace is claimed for the block (pid file, refused if a live runtime holds it)
        unless the caller already holds `claim`. `POST /stop` sets `stop_requested`: the
        owner decides what stopping means. On exit the socket is closed and removed.
        """
        if runtime.workspace is None:
            raise UsageError(
                "the control server needs a workspace: open the runtime with "
                "Runtime.open(workspace=...)"
            )
        async with contextlib.AsyncExitStack() as stack:
            if claim is None:
                claim = await stack.enter_async_context(claim_workspace(runtime.workspace))
            server = cls(runtime, claim)
            async with anyio.create_task_group() as tg:
                await tg.start(server._serve)
                log.info("control.listening", socket=str(claim.socket_path))
                try:
                    yield server
                finally:
                    server._closing.set()
                    server._stopped.set()

    async def _serve(self, *, task_status: TaskStatus[None]) -> None:
        sock = _bind(self.socket_path)
        try:
            app = create_control_app(
                self.runtime, on_stop=self.stop_requested.set, closing=self._closing
            )
            config = uvicorn.Config(
                app,
                # h11, with a deadline for a request's headers: the app sees none before
                # they are complete, so it cannot time them out itself.
                http=header_deadline(self.runtime.config.server.request_timeout),
                ws="none",
                lifespan="off",
                log_config=None,
                access_log=False,
                server_header=False,
                timeout_graceful_shutdown=GRACEFUL_TIMEOUT,
            )
            server = EmbeddedUvicorn(config, self._stopped, task_status.started)
            await server.serve(sockets=[sock])
        finally:
            sock.close()
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
            log.info("control.stopped", socket=str(self.socket_path))
