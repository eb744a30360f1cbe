"""The mailboxes' errors: a message a mailbox cannot take, a full or closed mailbox.

Each derives from `BatonError` (`baton.errors`, which re-exports them for users)."""

from __future__ import annotations

from baton.errors import RuntimeFailure, UsageError


class InvalidMessageError(UsageError):
    """Raised when a message payload does not validate against its declared type."""


class MailboxBlockedError(RuntimeFailure):
    """Raised when `send_nowait` cannot finish without waiting; `await send()` instead.

    A durable mailbox raises it for every `send_nowait`: its write goes through a worker
    thread, and the message must be stored before the sender goes on."""


class MailboxFullError(MailboxBlockedError):
    """Raised when `send_nowait` finds the mailbox at capacity; `send` would wait instead."""

    def __init__(self, name: str, capacity: int) -> None:
        self.name = name
        self.capacity = capacity
        super().__init__(
            f"mailbox {name!r} is full ({capacity} messages); use send() to wait for room"
        )


class MailboxClosedError(RuntimeFailure):
    """Raised when sending to, or receiving from, a mailbox that has been closed."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"mailbox {name!r} is closed")
