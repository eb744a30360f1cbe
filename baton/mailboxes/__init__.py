"""Mailboxes: the envelope, the `Mailbox` protocol, and its backends."""

from baton.mailboxes.envelope import Delivery, Envelope, new_id
from baton.mailboxes.memory import DEFAULT_CAPACITY, MemoryMailbox
from baton.mailboxes.protocol import DeadLetterSink, Mailbox

__all__ = [
    "DEFAULT_CAPACITY",
    "DeadLetterSink",
    "Delivery",
    "Envelope",
    "Mailbox",
    "MemoryMailbox",
    "new_id",
]
