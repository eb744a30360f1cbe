"""The runtime's dead-letter sink: every message baton gives up on, with the reason."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import anyio
import structlog

from baton.mailboxes.envelope import Envelope
from baton.runtime.token_log import TokenLog

log = structlog.get_logger(__name__)

DEFAULT_KEEP = 10_000


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One undeliverable or failed message and why it was given up on."""

    envelope: Envelope
    reason: str
    at: float

    @property
    def actor(self) -> str:
        return self.envelope.recipient


class DeadLetterLog:
    """Keeps the most recent dead letters in memory and logs each as `message.dead_lettered`."""

    def __init__(
        self,
        *,
        token_log: TokenLog | None = None,
        keep: int = DEFAULT_KEEP,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._token_log = token_log
        self._letters: deque[DeadLetter] = deque(maxlen=keep)
        self._clock = clock
        self._total = 0
        self._added = anyio.Event()

    def dead_letter(self, envelope: Envelope, reason: str) -> None:
        self._letters.append(DeadLetter(envelope, reason, self._clock()))
        self._total += 1
        added, self._added = self._added, anyio.Event()
        added.set()
        fields = {
            "actor": envelope.recipient,
            "message_id": envelope.id,
            "message_type": envelope.message_type,
            "attempt": envelope.attempt,
            "reason": reason,
        }
        log.warning("message.dead_lettered", sender=envelope.sender, **fields)
        if self._token_log is not None:
            self._token_log.emit("message.dead_lettered", **fields)

    @property
    def total(self) -> int:
        """How many messages were dead-lettered since start (the log keeps only the newest)."""
        return self._total

    async def wait_total(self, count: int) -> None:
        """Return once `count` messages in all have been dead-lettered."""
        while self._total < count:
            await self._added.wait()

    def __iter__(self) -> Iterator[DeadLetter]:
        return iter(list(self._letters))

    def __len__(self) -> int:
        return len(self._letters)
