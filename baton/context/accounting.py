"""Token accounting (docs/context.md, "Token accounting"): exact figures from the API,
estimates only for what is new.

The context size is the last call's `input_tokens + cache_creation_input_tokens +
cache_read_input_tokens + output_tokens` plus an estimate of what was added since (tool
results, a new user input). Estimates come from the CJK-aware estimator in `tokens.py`,
scaled by a ratio calibrated against what the API reported for payloads whose estimate we
knew. Every operation is O(size of what changed): nothing re-counts the history.
"""

from __future__ import annotations

import math

from baton.context.usage import Usage

# Observations outside this band are treated as noise (an empty payload, a counting bug),
# not as a property of the text: they would swing every later estimate.
MIN_RATIO = 0.5
MAX_RATIO = 3.0
# Weight of a new observation; a few calls are enough to settle, one odd call is not.
SMOOTHING = 0.3


class Calibration:
    """The ratio of actual to estimated input tokens, smoothed over calls."""

    def __init__(self, ratio: float = 1.0) -> None:
        self.ratio = ratio
        self.samples = 0

    def observe(self, actual: int, estimated: int) -> None:
        """Fold in one call: the API counted `actual` input tokens; we estimated `estimated`."""
        if actual <= 0 or estimated <= 0:
            return
        seen = min(MAX_RATIO, max(MIN_RATIO, actual / estimated))
        self.ratio = seen if self.samples == 0 else self.ratio + SMOOTHING * (seen - self.ratio)
        self.samples += 1

    def apply(self, raw: int) -> int:
        """A raw estimate scaled to what the API would count (rounded up: err high)."""
        return math.ceil(raw * self.ratio) if raw > 0 else 0

    def unapply(self, tokens: int) -> int:
        """How many raw-estimate tokens fit in `tokens` actual ones."""
        return math.floor(tokens / self.ratio) if tokens > 0 else 0


class TokenAccount:
    """One conversation's context size, kept up to date at O(1) per event.

    `observe` takes the usage of a call (exact); `add` the raw estimate of content appended
    since; `note_sent` the raw estimate of the payload just composed (so the next usage can
    calibrate); `reset` the size after a compaction (an estimate until the next call).
    """

    def __init__(self, calibration: Calibration | None = None) -> None:
        self.calibration = calibration or Calibration()
        self._base = 0
        self._added_raw = 0
        self._sent_raw: int | None = None
        self.exact = False
        self.last_usage: Usage | None = None

    @property
    def context_tokens(self) -> int:
        """The current context size: exact base plus calibrated estimate of the rest."""
        return self._base + self.calibration.apply(self._added_raw)

    @property
    def added_since_call(self) -> int:
        """Calibrated estimate of what was added since the last exact figure."""
        return self.calibration.apply(self._added_raw)

    @property
    def sent_estimate(self) -> int | None:
        """The raw estimate of the payload sent and not yet answered, if any."""
        return self._sent_raw

    def note_sent(self, raw_estimate: int) -> None:
        """Record the raw estimate of the payload being sent.

        Without an exact figure yet, that payload *is* the best knowledge of the context.
        """
        self._sent_raw = raw_estimate
        if not self.exact:
            self._base = 0
            self._added_raw = raw_estimate

    def observe(self, usage: Usage) -> None:
        """A call returned `usage`: the context size is now exact; calibrate if we can."""
        sent = self._sent_raw
        if sent is not None:
            actual = (
                usage.input_tokens
                + usage.cache_creation_input_tokens
                + usage.cache_read_input_tokens
            )
            self.calibration.observe(actual, sent)
        self._sent_raw = None
        self._base = usage.context_tokens
        self._added_raw = 0
        self.exact = True
        self.last_usage = usage

    def add(self, raw_estimate: int) -> None:
        """Content of `raw_estimate` raw tokens joined the context."""
        self._added_raw += raw_estimate

    def reset(self, tokens: int) -> None:
        """After a compaction: the context is `tokens` (calibrated estimate), not exact."""
        self._base = tokens
        self._added_raw = 0
        self._sent_raw = None
        self.exact = False
