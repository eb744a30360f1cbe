"""One log line per distinct failure, not one per occurrence (README.md, "Running baton").

When the process runs out of file descriptors, asyncio's accept loop reports the same
`EMFILE` once per connection waiting in the listen backlog, each with a traceback: thousands
of lines in a second, which bury whatever else went wrong. The event loop's exception
handler installed here logs a failure as one JSON line the first time it happens, then at
most once per `interval` with the number of repeats it held back, and never a traceback.
"""

from __future__ import annotations

import asyncio
import errno
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

REPEAT_INTERVAL = 60.0
_MAX_KEYS = 256  # distinct failures remembered; the oldest is forgotten beyond that
_OUT_OF = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


class RepeatLimiter:
    """Admits the first occurrence of each failure, then one per `interval` seconds."""

    def __init__(
        self, interval: float = REPEAT_INTERVAL, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._interval = interval
        self._clock = clock
        # key -> (when it was last admitted, occurrences held back since)
        self._seen: OrderedDict[Hashable, tuple[float, int]] = OrderedDict()

    def admit(self, key: Hashable) -> int | None:
        """None to hold this occurrence back; otherwise how many were held back before it."""
        now = self._clock()
        seen = self._seen.get(key)
        if seen is not None and now - seen[0] < self._interval:
            self._seen[key] = (seen[0], seen[1] + 1)
            return None
        self._seen[key] = (now, 0)
        self._seen.move_to_end(key)
        while len(self._seen) > _MAX_KEYS:
            self._seen.popitem(last=False)
        return 0 if seen is None else seen[1]


def _hint(error: BaseException | None) -> str | None:
    if isinstance(error, OSError) and error.errno in _OUT_OF:
        return (
            "the process is out of file descriptors or memory: close idle connections to the "
            "control socket, or raise `ulimit -n`; baton retries by itself"
        )
    return None


def _nothing() -> None:
    pass


def loop_exception_handler(
    limiter: RepeatLimiter, before_logging: Callable[[], None] = _nothing
) -> Callable[[asyncio.AbstractEventLoop, dict[str, Any]], None]:
    """An asyncio exception handler that logs each distinct failure as one rate-limited line;
    `before_logging` is called before each line (it may set logging up)."""

    def handle(_: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        error = context.get("exception")
        message = str(context.get("message") or "unhandled error in the event loop")
        key = (message, type(error).__name__, getattr(error, "errno", None))
        held_back = limiter.admit(key)
        if held_back is None:
            return
        fields: dict[str, Any] = {"problem": message}
        if error is not None:
            fields["error"] = f"{type(error).__name__}: {error}"
        hint = _hint(error)
        if hint is not None:
            fields["hint"] = hint
        if held_back:
            fields["repeats_held_back"] = held_back
        before_logging()
        # structlog, and rich which it loads, only once there is a line to log: the
        # command line's light commands start without them (docs/architecture.md, "What a
        # command imports").
        from baton._log import get_logger  # noqa: PLC0415

        get_logger(__name__).error("loop.error", **fields)

    return handle


def quiet_event_loop(
    limiter: RepeatLimiter | None = None, *, before_logging: Callable[[], None] = _nothing
) -> None:
    """Install the rate-limited handler on the running asyncio loop."""
    handler = loop_exception_handler(limiter or RepeatLimiter(), before_logging)
    asyncio.get_running_loop().set_exception_handler(handler)
