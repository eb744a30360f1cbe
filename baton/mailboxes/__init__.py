"""Mailboxes: the envelope, the `Mailbox` protocol, and its backends.

Every name is imported on first use: importing one module of the package (the client takes
its errors from `baton.mailboxes.errors`) runs this file first, and the command line's light
commands must not pay for SQLite, structlog or redis-py (docs/architecture.md, "What a
command imports")."""

from typing import TYPE_CHECKING

from baton._lazy import lazy_exports

if TYPE_CHECKING:
    from baton.mailboxes.codec import EnvelopeCodec
    from baton.mailboxes.envelope import Delivery, Envelope, new_id
    from baton.mailboxes.memory import DEFAULT_CAPACITY, MemoryMailbox
    from baton.mailboxes.protocol import DeadLetterSink, Mailbox
    from baton.mailboxes.redis import RedisMailbox
    from baton.mailboxes.sqlite import SqliteMailbox, SqliteStore

__getattr__ = lazy_exports(
    __name__,
    {
        "EnvelopeCodec": "baton.mailboxes.codec",
        "Delivery": "baton.mailboxes.envelope",
        "Envelope": "baton.mailboxes.envelope",
        "new_id": "baton.mailboxes.envelope",
        "DEFAULT_CAPACITY": "baton.mailboxes.memory",
        "MemoryMailbox": "baton.mailboxes.memory",
        "DeadLetterSink": "baton.mailboxes.protocol",
        "Mailbox": "baton.mailboxes.protocol",
        "RedisMailbox": "baton.mailboxes.redis",
        "SqliteMailbox": "baton.mailboxes.sqlite",
        "SqliteStore": "baton.mailboxes.sqlite",
    },
)

__all__ = [
    "DEFAULT_CAPACITY",
    "DeadLetterSink",
    "Delivery",
    "Envelope",
    "EnvelopeCodec",
    "Mailbox",
    "MemoryMailbox",
    "RedisMailbox",
    "SqliteMailbox",
    "SqliteStore",
    "new_id",
]
