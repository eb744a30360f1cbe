"""`Backoff`: the one exponential-backoff formula, for restarts, retries and lease waits.

The runtime restarts a failed actor after `backoff_initial * backoff_factor ** n`, capped
(docs/architecture.md, "runtime/"); the Claude client retries an error inside a stream, and a
Redis journal waits for a conversation's lease, on the same schedule with their own numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Backoff:
    """Jittered exponential backoff: `initial * factor**attempt`, capped, minus up to `jitter`.

    The defaults suit retrying a remote service (1 s doubling up to 30 s, a quarter of jitter);
    `jitter=0` gives a fixed schedule.
    """

    initial: float = 1.0
    factor: float = 2.0
    maximum: float = 30.0
    jitter: float = 0.25

    def delay(self, attempt: int, rand: float = 0.0) -> float:
        """Seconds to wait before retry number `attempt + 1`; `rand` is uniform in [0, 1)."""
        try:
            grown = self.initial * self.factor**attempt
        except OverflowError:  # a wait a thousand rounds long: far past any cap
            grown = math.inf if self.initial > 0 else 0.0
        base = min(self.maximum, grown)
        return base * (1.0 - self.jitter * rand)
