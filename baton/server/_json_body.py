"""Request bodies parsed off the event loop when they are large (docs/architecture.md, "What
a request body may cost").

The JSON parser and validation build one object per value while holding the interpreter
lock; on the event loop, a body of megabytes would stop every actor while it is parsed. A
body over `INLINE_CHECK_BYTES` is parsed on a worker thread, whose steps hand the lock back
to the loop; a small one on the loop, where a thread's round trip would cost more than the
parse. `RequestGuard` has bounded what the parser can meet (size, values, depth) already.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import anyio
from fastapi import Request, Response
from fastapi.routing import APIRoute

from baton.server._request_limits import INLINE_CHECK_BYTES

T = TypeVar("T")


async def off_the_loop_if_large(size: int, work: Callable[[], T]) -> T:
    """`work()`, on a worker thread when it handles a body of more than
    `INLINE_CHECK_BYTES` (`size`), else here."""
    if size <= INLINE_CHECK_BYTES:
        return work()
    return await anyio.to_thread.run_sync(work)


class _OffLoopJsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            self._json = await off_the_loop_if_large(len(body), lambda: json.loads(body))
        return self._json


class OffLoopJsonRoute(APIRoute):
    """A FastAPI route whose JSON body, when large, is parsed on a worker thread (FastAPI's
    documented way to change how a route reads its request: a custom `APIRoute`)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handler(request: Request) -> Response:
            return await handle(_OffLoopJsonRequest(request.scope, request.receive))

        return handler
