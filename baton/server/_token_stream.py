"""Token-log records over HTTP as NDJSON: the file as it is, or new records as they come.

Following, the records are this process's, and with a Redis mailbox every other process's
too, read from the stream they share (docs/token-log.md, "Across processes").
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from baton._log import get_logger
from baton.runtime.token_log import TokenLog
from baton.server._tail import read_lines

log = get_logger(__name__)

NDJSON = "application/x-ndjson"


class FollowResponse(Response):
    """NDJSON of token-log records as they are emitted, until disconnect or server close."""

    media_type = NDJSON

    def __init__(
        self, token_log: TokenLog, keep: Callable[[dict[str, Any]], bool], closing: anyio.Event
    ) -> None:
        self.status_code = 200
        self.background = None
        self._token_log = token_log
        self._keep = keep
        self._closing = closing
        self.init_headers(None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._end_on_disconnect, receive, tg.cancel_scope)
            tg.start_soon(self._end_on_close, tg.cancel_scope)
            async with _follow(self._token_log) as records:
                async for record in records:
                    if self._keep(record):
                        line = json.dumps(record, ensure_ascii=False) + "\n"
                        await send(
                            {"type": "http.response.body", "body": line.encode(), "more_body": True}
                        )
            tg.cancel_scope.cancel()  # the token log closed: the runtime is ending
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    @staticmethod
    async def _end_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        scope.cancel()

    async def _end_on_close(self, scope: anyio.CancelScope) -> None:
        await self._closing.wait()
        scope.cancel()


def _follow(
    token_log: TokenLog,
) -> AbstractAsyncContextManager[MemoryObjectReceiveStream[dict[str, Any]]]:
    if token_log.relay is None:
        return token_log.follow()
    # Only with a Redis mailbox: a process without one loads no redis-py.
    from baton.server._token_source import follow_every_process  # noqa: PLC0415

    return follow_every_process(token_log)


async def file_lines(
    path: Path | None, keep: Callable[[dict[str, Any]], bool]
) -> AsyncIterator[str]:
    """The lines of the token log file at `path` whose records `keep` accepts, as NDJSON."""
    if path is None:
        return
    async for line in read_lines(path):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            log.warning("control.token_line_unreadable", line=line[:200])
            continue
        if isinstance(record, dict) and keep(record):
            yield line + "\n"
