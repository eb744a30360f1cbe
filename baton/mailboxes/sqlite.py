"""`SqliteMailbox`: a durable mailbox in one SQLite database per workspace.

Every mailbox of a runtime lives in `<workspace>/.baton/mailboxes.sqlite3` (WAL mode), a
`SqliteStore`. A message is a row from `send` until `ack`; `receive` marks it in flight and
counts the delivery (or the `ack` before it did, in its own transaction, when the message was
already waiting), so a message that was in flight when the process died is delivered again
on the next start, one attempt later, and one that keeps killing the process is dead-lettered
once it has used `max_attempts` deliveries. Acked ids are remembered (the newest `REMEMBERED`
of them), so an envelope sent again with the same id is dropped, not handled twice.

The statements run on the event loop, a batch of operations per transaction (group commit,
`_group_commit`), and the checkpoints, which also keep the `-wal` bounded, on a worker thread
(`_sqlite_checkpoint`): a WAL commit with `synchronous=NORMAL` does not fsync, a checkpoint
does. That survives a killed process (the case a crash test exercises); only a power loss can
take the last commits.
"""

from __future__ import annotations

import time
from collections import deque

import anyio

from baton._log import get_logger
from baton.mailboxes._sqlite_store import DATABASE, REMEMBERED, SqliteStore
from baton.mailboxes.codec import EnvelopeCodec
from baton.mailboxes.envelope import Delivery, Envelope
from baton.mailboxes.errors import InvalidMessageError, MailboxBlockedError, MailboxClosedError
from baton.mailboxes.protocol import DeadLetterSink

log = get_logger(__name__)

LARGE_BODY = 64 * 1024
"""An envelope stored as more bytes than this is written, and acked, on the worker thread:
copying megabytes into the -wal would hold every actor (docs/architecture.md, "What a
request body may cost")."""

YIELD_EVERY = 0.001
"""Seconds a consumer with a queue may take messages for before `receive` yields once: a
yield is a pass of the event loop, several microseconds, a fifth of what a message costs."""

__all__ = ["DATABASE", "REMEMBERED", "SqliteMailbox", "SqliteStore"]


class _TakenAhead:
    """The take of the next waiting message, committed with the ack before it."""

    __slots__ = ("committed", "ended", "seq", "waiter")

    def __init__(self, seq: int) -> None:
        self.seq = seq
        self.committed = False
        self.ended = False  # the ack's transaction is over, committed or not
        self.waiter: anyio.Event | None = None  # for a receive that comes before the end

    def commit(self) -> None:
        self.committed = True

    def end(self) -> None:
        self.ended = True
        if self.waiter is not None:
            self.waiter.set()

    async def wait(self) -> None:
        if not self.ended:
            self.waiter = anyio.Event()
            await self.waiter.wait()


class SqliteMailbox:
    """One actor's durable inbox in a `SqliteStore`; the actor's cell is its only consumer.

    Envelopes wait in memory as well as on disk, so `depth` and ordering need no query; the
    disk copy is what a restart reads. `send_nowait` always raises `MailboxBlockedError`: a
    message counts as sent only once it is stored, and storing it waits for its batch.
    """

    def __init__(
        self,
        name: str,
        store: SqliteStore,
        codec: EnvelopeCodec,
        *,
        capacity: int,
        max_attempts: int = 3,
        dead_letters: DeadLetterSink | None = None,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"mailbox capacity must be >= 1, got {capacity}")
        self._name = name
        self._store = store
        self._codec = codec
        self._capacity = capacity
        self._max_attempts = max_attempts
        self._dead_letters = dead_letters
        self._ready: deque[tuple[int, Envelope]] = deque()
        self._large: set[int] = set()  # the stored rows over LARGE_BODY, by seq
        self._ahead: _TakenAhead | None = None  # the first waiting message, taken already
        self._yield_at = 0.0  # when `receive` next lets the other tasks run
        self._loaded = False
        self._load_lock = anyio.Lock()
        self._closed = False
        self._arrived = anyio.Event()
        self._room = anyio.Event()

    @property
    def name(self) -> str:
        return self._name

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def durable(self) -> bool:
        return True

    async def _ensure_loaded(self) -> None:
        """Read what an earlier process left; redeliver it in send order, once."""
        if self._loaded:
            return
        async with self._load_lock:
            if self._loaded:
                return
            rows = await self._store.run(self._store.load, self._name)
            for seq, in_flight, deliveries, body in rows:
                await self._restore(seq, bool(in_flight), deliveries, body)
            self._loaded = True
            if rows:
                log.info("mailbox.recovered", mailbox=self._name, envelopes=len(self._ready))

    async def _restore(self, seq: int, in_flight: bool, deliveries: int, body: str) -> None:
        try:
            envelope = self._codec.decode(body, attempt=deliveries + 1)
        except InvalidMessageError as exc:
            await self._bury(seq, f"undecodable-{seq}", body, f"cannot be read back: {exc}", None)
            return
        if deliveries >= self._max_attempts:
            reason = (
                f"delivered {deliveries} time(s) and never acked (the process stopped while "
                "handling it each time)"
            )
            await self._bury(seq, envelope.id, body, reason, envelope)
            return
        if in_flight:
            await self._store.settle(self._store.release, seq)
        if len(body) > LARGE_BODY:
            self._large.add(seq)
        self._ready.append((seq, envelope))

    async def _bury(
        self, seq: int, envelope_id: str, body: str, reason: str, envelope: Envelope | None
    ) -> None:
        heavy = len(body) > LARGE_BODY
        await self._store.settle(
            self._store.bury, seq, envelope_id, self._name, reason, body, heavy=heavy
        )
        self._large.discard(seq)
        log.warning("mailbox.dead_lettered", mailbox=self._name, id=envelope_id, reason=reason)
        if envelope is not None and self._dead_letters is not None:
            self._dead_letters.dead_letter(envelope, reason)

    async def send(self, envelope: Envelope) -> None:
        if not self._loaded:
            await self._ensure_loaded()
        while len(self._ready) >= self._capacity and not self._closed:
            if self._room.is_set():
                self._room = anyio.Event()
            await self._room.wait()
        if self._closed:
            raise MailboxClosedError(self._name)
        body = self._codec.encode(envelope)
        large = len(body) > LARGE_BODY
        # No room raises DiskFullFailure to the sender: new work is refused, not queued.
        seq = await self._store.write(
            self._store.insert, envelope.id, self._name, body, heavy=large
        )
        if large and seq is not None:
            self._large.add(seq)
        if self._closed and seq is not None:
            # Closed while storing: the row stays for the next start, which delivers it.
            raise MailboxClosedError(self._name)
        if seq is None:
            log.info("mailbox.duplicate_dropped", mailbox=self._name, id=envelope.id)
            return
        self._ready.append((seq, envelope))
        self._arrived.set()

    def send_nowait(self, envelope: Envelope) -> None:
        if self._closed:
            raise MailboxClosedError(self._name)
        raise MailboxBlockedError(
            f"mailbox {self._name!r} is durable: await send() so the message is stored first"
        )

    async def receive(self) -> Delivery:
        if not self._loaded:
            await self._ensure_loaded()
        if self._ready and time.monotonic() >= self._yield_at:
            # The take and the ack commit at once on the event loop (`_group_commit`): a
            # yield every YIELD_EVERY seconds, so a long queue never holds the loop for its
            # whole length, without the cost of a pass of the loop per message.
            await anyio.lowlevel.checkpoint()
            self._yield_at = time.monotonic() + YIELD_EVERY
        while not self._ready:
            if self._closed:
                raise MailboxClosedError(self._name)
            if self._arrived.is_set():
                self._arrived = anyio.Event()
            await self._arrived.wait()
        seq, envelope = self._ready.popleft()
        self._room.set()
        ahead = self._ahead
        if ahead is not None and ahead.seq == seq:
            self._ahead = None
            if not ahead.ended:  # its ack is still committing on the thread (a large row)
                await ahead.wait()
            if ahead.committed:
                return Delivery(envelope, str(seq))
        await self._store.settle(self._store.take, seq, now=True)
        return Delivery(envelope, str(seq))

    def receive_nowait(self) -> Delivery | None:
        # Taking a message is a write (in flight, delivery count): only `receive` does it.
        return None

    async def ack(self, delivery: Delivery) -> None:
        assert delivery.tag is not None
        seq = int(delivery.tag)
        heavy = seq in self._large
        store = self._store
        if self._ahead is not None or not self._ready or self._closed:
            await store.settle(store.ack, seq, delivery.envelope.id, now=True, heavy=heavy)
            self._large.discard(seq)
            return
        # The next message waits already: its take commits with this ack, one transaction
        # for both, and `receive` hands it out without a commit of its own (docs/
        # architecture.md, "The SQLite mailbox on the event loop").
        ahead = self._ahead = _TakenAhead(self._ready[0][0])
        try:
            await store.settle(
                store.ack, seq, delivery.envelope.id, ahead.seq, ahead.commit, now=True, heavy=heavy
            )
        finally:
            if not ahead.committed and self._ahead is ahead:
                self._ahead = None
            ahead.end()
        self._large.discard(seq)

    async def nack(self, delivery: Delivery, *, requeue: bool, reason: str) -> None:
        assert delivery.tag is not None
        seq = int(delivery.tag)
        envelope = delivery.envelope
        if requeue:
            await self._store.settle(self._store.release, seq)
            self._ready.appendleft((seq, envelope.retried()))
            self._arrived.set()
            return
        await self._bury(seq, envelope.id, self._codec.encode(envelope), reason, envelope)

    def depth(self) -> int:
        return len(self._ready)

    async def close(self) -> None:
        self._closed = True
        self._arrived.set()
        self._room.set()

    def drain_nowait(self) -> list[Envelope]:
        # What is still queued stays stored: the next start of this actor delivers it.
        self._closed = True
        self._ready.clear()
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            # Taken with the last ack, never handed out: not a delivery. Undone with the
            # next batch (at the latest as the store closes); a kill first leaves it counted.
            self._store.later(self._store.untake, ahead.seq)
        self._arrived.set()
        self._room.set()
        return []
