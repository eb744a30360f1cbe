"""Mailboxes: the envelope, the `Mailbox` protocol, and its backends."""

from baton.mailboxes.codec import EnvelopeCodec
from baton.mailboxes.envelope import Delivery, Envelope, new_id
from baton.mailboxes.memory import DEFAULT_CAPACITY, MemoryMailbox
from baton.mailboxes.protocol import DeadLetterSink, Mailbox
from baton.mailboxes.sqlite import SqliteMailbox, SqliteStore

__all__ = [
    "DEFAULT_CAPACITY",
    "DeadLetterSink",
    "Delivery",
    "Envelope",
    "EnvelopeCodec",
    "Mailbox",
    "MemoryMailbox",
    "SqliteMailbox",
    "SqliteStore",
    "new_id",
]
