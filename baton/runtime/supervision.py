"""Supervision policy: how often a message is retried and how an actor restarts."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio

from baton.runtime.backoff import Backoff


@dataclass(frozen=True, slots=True)
class SupervisorPolicy:
    """Retry, backoff and restart-intensity settings, with an injectable clock and sleep.

    A handler that raises makes the actor restart after a backoff of
    `backoff_initial * backoff_factor ** (consecutive failures - 1)`, capped at `backoff_max`.
    A message is tried at most `max_attempts` times, then dead-lettered. More than
    `max_restarts` restarts within `restart_window` seconds spend the restart budget: the
    actor cools down for `cooldown` seconds (its mailbox keeps filling), then restarts with
    the budget whole again, so a long-lived process heals once the trouble passes.
    `cooldown=0` stops the actor for good instead.
    """

    max_attempts: int = 3
    backoff_initial: float = 0.05
    backoff_factor: float = 2.0
    backoff_max: float = 5.0
    max_restarts: int = 5
    restart_window: float = 60.0
    cooldown: float = 60.0
    clock: Callable[[], float] = field(default=time.monotonic)
    sleep: Callable[[float], Awaitable[None]] = field(default=anyio.sleep)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if self.max_restarts < 0 or self.restart_window <= 0:
            raise ValueError("max_restarts must be >= 0 and restart_window > 0")
        if self.cooldown < 0:
            raise ValueError("cooldown must be >= 0 (0: a spent restart budget stops the actor)")

    @property
    def backoff(self) -> Backoff:
        """The restart schedule these settings describe (no jitter)."""
        return Backoff(self.backoff_initial, self.backoff_factor, self.backoff_max, jitter=0.0)


class RestartTracker:
    """Counts one actor's restarts against the policy's intensity limit and backoff."""

    def __init__(self, policy: SupervisorPolicy) -> None:
        self._policy = policy
        self._recent: deque[float] = deque()
        self._consecutive = 0

    def allow(self) -> bool:
        """Record a restart; False when it would exceed the intensity limit."""
        now = self._policy.clock()
        horizon = now - self._policy.restart_window
        while self._recent and self._recent[0] <= horizon:
            self._recent.popleft()
        if len(self._recent) >= self._policy.max_restarts:
            return False
        self._recent.append(now)
        return True

    def next_delay(self) -> float:
        """The backoff before this restart; grows with consecutive failures."""
        delay = self._policy.backoff.delay(self._consecutive)
        self._consecutive += 1
        return delay

    def succeeded(self) -> None:
        """A message was handled: the next failure starts from the initial backoff again."""
        self._consecutive = 0

    def cooled_down(self) -> None:
        """The cool-down after a spent budget is over: a whole budget again, and the backoff
        from its start."""
        self._recent.clear()
        self._consecutive = 0

    @property
    def restarts_in_window(self) -> int:
        return len(self._recent)
