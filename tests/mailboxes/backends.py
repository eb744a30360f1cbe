"""The backends of the mailbox contract (`test_contract.py`): memory, SQLite, a real Redis and
a real three-primary Redis Cluster, each lived one "process life" at a time, with what
legitimately differs between them declared as traits here rather than tested for in the
tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel
from redis.asyncio import Redis, RedisCluster

from baton.mailboxes import Envelope, Mailbox, MemoryMailbox, SqliteMailbox, SqliteStore
from baton.mailboxes.codec import EnvelopeCodec
from baton.mailboxes.protocol import DeadLetterSink


class Ping(BaseModel):
    n: int


class Item(BaseModel):
    """Message `seq` of sender `sender`."""

    sender: int
    seq: int


CODEC = EnvelopeCodec({"Ping": Ping, "Item": Item})


def ping(n: int) -> Envelope:
    """A fresh envelope (new id) carrying `Ping(n)`: every backend can store it."""
    return Envelope("box", Ping(n=n))


@dataclass(frozen=True)
class Traits:
    """What a backend declares about itself where backends legitimately differ."""

    durable: bool
    """Messages outlive the process: `send_nowait` is refused (a message counts as sent only
    once stored), `drain_nowait` hands nothing back, and the next start delivers whatever was
    not acked."""
    drains_backlog_on_close: bool
    """After `close`, `receive` hands out the whole queue. Redis hands out only what this
    process already fetched; the backlog stays in the stream for the next consumer."""


TRAITS = {
    "memory": Traits(durable=False, drains_backlog_on_close=True),
    "sqlite": Traits(durable=True, drains_backlog_on_close=True),
    "redis": Traits(durable=True, drains_backlog_on_close=False),
    "redis-cluster": Traits(durable=True, drains_backlog_on_close=False),
}


def kinds(**wanted: bool) -> list[str]:
    """The backends whose traits have the given values."""
    return [
        kind
        for kind, traits in TRAITS.items()
        if all(getattr(traits, name) == value for name, value in wanted.items())
    ]


Make = Callable[[str, int, DeadLetterSink | None, int], Mailbox]


class Life:
    """One process's life on a backend: the mailboxes it opened die with it, unacked."""

    def __init__(self, make: Make) -> None:
        self._make = make
        self._made: list[Mailbox] = []

    def open(
        self,
        name: str = "box",
        *,
        capacity: int = 8,
        sink: DeadLetterSink | None = None,
        max_attempts: int = 3,
    ) -> Mailbox:
        """A mailbox of this life; `max_attempts` bounds a durable backend's deliveries (the
        memory mailbox has none: supervision counts attempts there)."""
        box = self._make(name, capacity, sink, max_attempts)
        self._made.append(box)
        return box

    def end(self) -> None:
        """The process stops: every mailbox is drained, what it holds left unacked."""
        for box in self._made:
            box.drain_nowait()


@dataclass(frozen=True)
class Backend:
    """One backend under test: its traits, and a way to live one process life on it. Lives
    opened one after the other share the backend's storage (a durable backend's restart)."""

    kind: str
    traits: Traits
    life: Callable[[], AbstractAsyncContextManager[Life]]

    @property
    def durable(self) -> bool:
        return self.traits.durable


def memory_backend() -> Backend:
    """In-process mailboxes: nothing outlives a life."""

    def make(name: str, capacity: int, sink: DeadLetterSink | None, _: int) -> Mailbox:
        return MemoryMailbox(name, capacity=capacity, dead_letters=sink)

    @asynccontextmanager
    async def life() -> AsyncIterator[Life]:
        lived = Life(make)
        try:
            yield lived
        finally:
            lived.end()

    return Backend("memory", TRAITS["memory"], life)


def sqlite_backend(path: Path) -> Backend:
    """Every life opens the database at `path` and closes it at its end."""

    @asynccontextmanager
    async def life() -> AsyncIterator[Life]:
        async with SqliteStore.open(path) as store:

            def make(name: str, capacity: int, sink: DeadLetterSink | None, tries: int) -> Mailbox:
                return SqliteMailbox(
                    name, store, CODEC, capacity=capacity, max_attempts=tries, dead_letters=sink
                )

            lived = Life(make)
            try:
                yield lived
            finally:
                lived.end()

    return Backend("sqlite", TRAITS["sqlite"], life)


def redis_backend(client: Redis | RedisCluster) -> Backend:
    """Every life reads as the same consumer, so a restart gets its own pending entries back.
    On a cluster client ("redis-cluster"), the same mailboxes over three primaries.

    `read_batch=1`: a receive fetches only what it hands out, so a message counts as
    delivered once it is handed out, as on the other backends (fetching ahead is Redis's own
    behaviour, tested in `test_redis_mailbox.py`). `block` is long so that a receiver woken
    early was woken by `close`, not by XREADGROUP's timeout."""
    from baton.mailboxes.redis import RedisMailbox  # noqa: PLC0415 (redis-py is optional)

    def make(name: str, capacity: int, sink: DeadLetterSink | None, tries: int) -> Mailbox:
        return RedisMailbox(
            name,
            client=client,
            codec=CODEC,
            capacity=capacity,
            dead_letters=sink,
            consumer="worker",
            max_attempts=tries,
            read_batch=1,
            block=30.0,
        )

    @asynccontextmanager
    async def life() -> AsyncIterator[Life]:
        lived = Life(make)
        try:
            yield lived
        finally:
            lived.end()

    kind = "redis-cluster" if isinstance(client, RedisCluster) else "redis"
    return Backend(kind, TRAITS[kind], life)
