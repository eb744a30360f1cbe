"""The runtime's dead-letter sink: every message baton gives up on, with the reason.

Bounded like the sqlite mailbox's table (README.md, "Durable mailboxes and crashes"): the
newest `keep` letters younger than `max_age`, each payload whole only while its JSON fits
the excerpt size; a bigger one is replaced by its excerpt, size and hash (`OmittedPayload`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import anyio
from pydantic import BaseModel

from baton._log import get_logger
from baton.mailboxes.dead_letter_body import EXCERPT_BYTES, BodyExcerpt, excerpt
from baton.mailboxes.envelope import Envelope
from baton.runtime.token_log import TokenLog

log = get_logger(__name__)

DEFAULT_KEEP = 10_000
DEFAULT_MAX_AGE = 30 * 86_400.0


@dataclass(frozen=True, slots=True)
class OmittedPayload:
    """What stands in a dead letter's envelope for a payload too big to keep whole."""

    message_type: str
    body: BodyExcerpt


def _body(payload: object) -> str:
    if isinstance(payload, BaseModel):
        return payload.model_dump_json()
    return repr(payload)


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One undeliverable or failed message and why it was given up on."""

    envelope: Envelope  # its payload is an `OmittedPayload` when it was too big to keep
    reason: str
    at: float
    message_type: str = ""
    body: BodyExcerpt | None = None  # the payload's JSON (or repr), cut, sized and hashed

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
        max_age: float = DEFAULT_MAX_AGE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._token_log = token_log
        self._letters: deque[DeadLetter] = deque(maxlen=keep)
        self._max_age = max_age
        self._clock = clock
        self._total = 0
        self._added = anyio.Event()

    def dead_letter(self, envelope: Envelope, reason: str) -> None:
        body = excerpt(_body(envelope.payload))
        kept = envelope
        if body.size > EXCERPT_BYTES:
            kept = envelope._replace(payload=OmittedPayload(envelope.message_type, body))
        now = self._clock()
        self._letters.append(DeadLetter(kept, reason, now, envelope.message_type, body))
        self._prune(now)
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

    def _prune(self, now: float) -> None:
        # Appended in time order: the old ones are at the left.
        horizon = now - self._max_age
        while self._letters and self._letters[0].at < horizon:
            self._letters.popleft()

    def __iter__(self) -> Iterator[DeadLetter]:
        self._prune(self._clock())
        return iter(list(self._letters))

    def __len__(self) -> int:
        self._prune(self._clock())
        return len(self._letters)
