"""The event loop's rate-limited exception handler sets logging up before its first line, so
a command that imports no structlog still logs a loop failure as the others do."""

from __future__ import annotations

import asyncio
import errno

import structlog

from baton.server._log_limits import RepeatLimiter, loop_exception_handler


async def test_logging_is_set_up_before_each_line_it_logs() -> None:
    """`before_logging` runs before the line is logged, and not for an occurrence held back."""
    calls: list[str] = []
    handler = loop_exception_handler(RepeatLimiter(), lambda: calls.append("set up"))
    failure = {"message": "accept failed", "exception": OSError(errno.EMFILE, "too many")}
    with structlog.testing.capture_logs() as logs:
        handler(asyncio.get_running_loop(), failure)
        handler(asyncio.get_running_loop(), failure)
    assert (["set up"], ["loop.error"]) == (calls, [line["event"] for line in logs])
