"""Idle conversations leave memory: which ones are idle, since when, and the timer that
passivates them (docs/context.md, "Idle conversations").

A conversation is idle while no round holds it. Everything it holds is journaled before it
counts, so passivating it is only forgetting the cached state: its next message reads it
back from the journal, as a restarted process would. Dropping a state is synchronous and
does no I/O, so the timer is a plain event-loop callback, not a task.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from baton._log import get_logger

log = get_logger(__name__)


class Passivation:
    """When each cached conversation went idle, and the timer that drops the ones idle for
    `after` seconds (0: never) through `drop`, which may refuse one it cannot drop yet."""

    def __init__(
        self,
        after: float,
        drop: Callable[[str], bool],
        *,
        owner: Callable[[], str],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.after = after
        self._drop = drop
        self._owner = owner
        self._clock = clock
        self._holds: dict[str, int] = {}
        # Idle conversations, oldest first: a dict keeps insertion order, and a conversation
        # that goes idle again is moved to the end, so the sweep stops at the first one that
        # is not due and costs only what it drops.
        self._idle: dict[str, float] = {}
        self._timer: asyncio.TimerHandle | None = None

    def held(self, conversation: str) -> None:
        """A round (or another holder) took the conversation: it is not idle."""
        self._holds[conversation] = self._holds.get(conversation, 0) + 1
        self._idle.pop(conversation, None)

    def released(self, conversation: str, *, cached: bool) -> None:
        """A holder let the conversation go; idle from now once no one holds it and a state
        of it is `cached`."""
        left = self._holds[conversation] - 1
        if left:
            self._holds[conversation] = left
            return
        del self._holds[conversation]
        if cached:
            self.touched(conversation)

    def touched(self, conversation: str) -> None:
        """The conversation's state was used outside a hold: idle from now."""
        if self.after <= 0 or conversation in self._holds:
            return
        self._idle.pop(conversation, None)
        self._idle[conversation] = self._clock()
        self._arm()

    def forget(self, conversation: str) -> None:
        """The conversation's state left the cache some other way: nothing to drop."""
        self._idle.pop(conversation, None)

    @property
    def idle(self) -> int:
        """How many cached conversations are idle."""
        return len(self._idle)

    def sweep(self) -> int:
        """Drop every conversation idle for `after` seconds or more; how many were dropped."""
        if self.after <= 0:
            return 0
        now = self._clock()
        dropped, kept = 0, []
        while self._idle:
            conversation, since = next(iter(self._idle.items()))
            if now - since < self.after:
                break
            del self._idle[conversation]
            if self._drop(conversation):
                dropped += 1
            else:
                kept.append(conversation)
        for conversation in kept:  # not droppable yet: idle again from now
            self._idle[conversation] = now
        if dropped:
            log.info("agent.conversations_passivated", actor=self._owner(), count=dropped)
        return dropped

    def close(self) -> None:
        """Stop the timer (the agent stops)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self) -> None:
        if self._timer is not None or not self._idle:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no event loop to wake us: the next hold sweeps instead
        since = next(iter(self._idle.values()))
        delay = max(0.0, since + self.after - self._clock())
        self._timer = loop.call_later(delay, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self.sweep()
        self._arm()
