"""The `Mailbox` protocol every backend implements, and the sink dead letters go to."""

from __future__ import annotations

from typing import Protocol

from baton.mailboxes.envelope import Delivery, Envelope


class DeadLetterSink(Protocol):
    """Where a mailbox puts an envelope it gives up on, with the reason."""

    def dead_letter(self, envelope: Envelope, reason: str) -> None: ...


class Mailbox(Protocol):
    """A bounded, ordered inbox for one actor.

    `send` waits while the mailbox is full: that wait is the backpressure a fast producer
    feels. `receive` raises `MailboxClosedError` once the mailbox is closed and drained.
    """

    @property
    def name(self) -> str: ...

    @property
    def capacity(self) -> int: ...

    @property
    def durable(self) -> bool:
        """Whether messages outlive the process; only then does `ack` have work to do."""
        ...

    async def send(self, envelope: Envelope) -> None: ...

    def send_nowait(self, envelope: Envelope) -> None:
        """Enqueue without waiting; raise `MailboxFullError` when at capacity."""
        ...

    async def receive(self) -> Delivery: ...

    def receive_nowait(self) -> Delivery | None:
        """The next delivery if one is ready without waiting, else None (the fast path)."""
        ...

    async def ack(self, delivery: Delivery) -> None: ...

    async def nack(self, delivery: Delivery, *, requeue: bool, reason: str) -> None:
        """Give a delivery back: requeue it for another attempt, or dead-letter it."""
        ...

    def depth(self) -> int:
        """Messages waiting, not counting one being handled."""
        ...

    async def close(self) -> None:
        """Refuse new sends; what is queued can still be received (that is the drain)."""
        ...

    def drain_nowait(self) -> list[Envelope]:
        """Close for good and return everything still queued (the actor stopped)."""
        ...
