"""Mailboxes: the envelope, the `Mailbox` protocol, and its backends."""

from typing import TYPE_CHECKING, Any

from baton.mailboxes.codec import EnvelopeCodec
from baton.mailboxes.envelope import Delivery, Envelope, new_id
from baton.mailboxes.memory import DEFAULT_CAPACITY, MemoryMailbox
from baton.mailboxes.protocol import DeadLetterSink, Mailbox
from baton.mailboxes.sqlite import SqliteMailbox, SqliteStore

if TYPE_CHECKING:
    from baton.mailboxes.redis import RedisMailbox


def __getattr__(name: str) -> Any:
    # redis-py costs a tenth of a second to import: only a process that uses Redis pays it.
    if name == "RedisMailbox":
        from baton.mailboxes.redis import RedisMailbox  # noqa: PLC0415

        return RedisMailbox
    raise AttributeError(f"module 'baton.mailboxes' has no attribute {name!r}")


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
