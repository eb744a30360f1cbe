"""The envelope every message travels in, and the delivery a mailbox hands out."""

from __future__ import annotations

import itertools
import os
import time
from typing import Any, NamedTuple

# Ids must stay unique across processes and restarts (durable mailboxes dedupe on them), yet
# minting one sits on the hot path of every tell: an envelope keeps a random per-process
# origin plus a sequence number and formats the id only when someone reads it.
ORIGIN = os.urandom(6).hex()
_SEQUENCE = itertools.count(1)


def new_id() -> str:
    """Return a process-unique, restart-unique id (for correlation ids and the like)."""
    return f"{ORIGIN}-{next(_SEQUENCE):x}"


class _EnvelopeFields(NamedTuple):
    recipient: str
    payload: Any
    sender: str | None
    correlation_id: str | None
    reply_to: str | None
    attempt: int
    seq: int
    origin: str
    created_at: float


class Envelope(_EnvelopeFields):
    """One message in transit: the payload plus what routing and supervision need.

    Immutable and slotted. It is a tuple rather than a `dataclass(frozen=True, slots=True)`
    because it is built on every tell and a frozen dataclass's `__init__` costs 3x as much
    (0.83 us against 0.28 us measured here); durable backends validate it when they decode
    it, at their own boundary.
    """

    __slots__ = ()

    def __new__(
        cls,
        recipient: str,
        payload: Any,
        sender: str | None = None,
        *,
        correlation_id: str | None = None,
        reply_to: str | None = None,
        attempt: int = 1,
        seq: int | None = None,
        origin: str = ORIGIN,
        created_at: float | None = None,
    ) -> Envelope:
        return tuple.__new__(
            cls,
            (
                recipient,
                payload,
                sender,
                correlation_id,
                reply_to,
                attempt,
                next(_SEQUENCE) if seq is None else seq,
                origin,
                time.time() if created_at is None else created_at,
            ),
        )

    @property
    def id(self) -> str:
        """The message id, unique across processes: `<origin>-<sequence in hex>`."""
        return f"{self.origin}-{self.seq:x}"

    @property
    def message_type(self) -> str:
        """The payload's type name, which is what handlers are dispatched on."""
        return type(self.payload).__name__

    def retried(self) -> Envelope:
        """The same message, one attempt later (same id)."""
        return self._replace(attempt=self.attempt + 1)


_new_tuple = tuple.__new__
_now = time.time


def told(recipient: str, payload: Any, sender: str | None) -> Envelope:
    """`Envelope(recipient, payload, sender)` for a plain tell, built in one step: the keyword
    handling of `Envelope.__new__` is a third of an envelope's cost, and this is on the path
    of every tell."""
    return _new_tuple(
        Envelope, (recipient, payload, sender, None, None, 1, next(_SEQUENCE), ORIGIN, _now())
    )


def asked(
    recipient: str, payload: Any, sender: str | None, correlation_id: str, reply_to: str
) -> Envelope:
    """`Envelope(recipient, payload, sender, correlation_id=..., reply_to=...)` for an ask,
    built in one step as `told` builds a tell's: it is on the path of every ask."""
    return _new_tuple(
        Envelope,
        (recipient, payload, sender, correlation_id, reply_to, 1, next(_SEQUENCE), ORIGIN, _now()),
    )


class Delivery(NamedTuple):
    """An envelope handed out by `Mailbox.receive`; ack or nack it exactly once.

    `tag` is the backend's own handle for the delivery (a stream entry id, a row id), or
    None where the backend needs none.
    """

    envelope: Envelope
    tag: str | None = None
