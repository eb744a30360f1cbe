"""One model's rate-limit pause, shared by every conversation that calls it.

The SDK retries a 429 itself, after the `retry-after` the API sent, but only that request
waits: every other conversation would go on sending and collect 429s of its own. The throttle
sees each HTTP response; a 429 holds back every later request to the model until its
`retry-after` has passed (README.md, "Configuration": model calls shared fairly).
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Awaitable, Callable, Mapping

import anyio

from baton._log import get_logger

log = get_logger(__name__)

DEFAULT_PAUSE = 1.0
"""Seconds to hold back after a 429 that names no `retry-after`."""
MAX_PAUSE = 300.0
"""The longest pause a `retry-after` can impose (a bad header must not stop a model)."""


def retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds the API asked to wait: `retry-after-ms`, else `retry-after` (seconds or an
    HTTP date); None when neither says."""
    try:
        return float(headers["retry-after-ms"]) / 1000
    except (KeyError, TypeError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        if parsed is None:
            return None
        return email.utils.mktime_tz(parsed) - (time.time() if now is None else now)


class ModelThrottle:
    """Holds back a model's requests after a 429, for every caller of the model."""

    def __init__(
        self,
        model: str,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    ) -> None:
        self._model = model
        self._clock = clock
        self._sleep = sleep
        self.until = 0.0  # on `clock`'s scale: no request before then
        self.pauses = 0  # 429s seen, for status and tests

    def saw(self, status: int, headers: Mapping[str, str]) -> None:
        """Note one HTTP response of the model's API."""
        if status != 429:
            return
        asked = retry_after(headers)
        pause = min(MAX_PAUSE, max(0.0, DEFAULT_PAUSE if asked is None else asked))
        self.until = max(self.until, self._clock() + pause)
        self.pauses += 1
        log.warning("model.throttled", model=self._model, retry_after_s=round(pause, 3))

    async def wait(self) -> None:
        """Return once no 429 holds the model back."""
        while (remaining := self.until - self._clock()) > 0:
            await self._sleep(remaining)
