"""`SqliteStore`: the one SQLite database (WAL) that holds every durable mailbox of a
workspace (opened and checked by `_sqlite_open`), and the statements the mailboxes run
through its group commit.

Failures are said, not crashed on (`_sqlite_health`): a send that finds no room raises
`DiskFullFailure`, and a write that settles a stored message (take, release, ack, bury) waits
for room with backoff, so a full disk refuses new work, keeps every queued message and
resumes by itself; a damaged database is one `StateFileError` naming it; a database that
lost messages against its mark file is reported at open (`warnings`, `mailbox.lost`).
Dead letters keep a bounded excerpt of the body and are pruned by count and age.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Protocol, TypeVar

import anyio

from baton._log import get_logger
from baton.errors import DiskFullFailure
from baton.mailboxes._group_commit import GroupCommit
from baton.mailboxes._sqlite_checkpoint import Checkpointer
from baton.mailboxes._sqlite_health import Counts, MarkFile, compare, translate
from baton.mailboxes._sqlite_open import open_checked
from baton.mailboxes.dead_letter_body import excerpt

log = get_logger(__name__)

T = TypeVar("T")

DATABASE = Path(".baton") / "mailboxes.sqlite3"
REMEMBERED = 100_000  # acked ids kept for deduplication
_PRUNE_EVERY = 1_000  # acks between two prunes of the remembered ids
DEAD_LETTER_MAX = 10_000  # dead letters kept, newest first (`runtime.dead_letter_max`)
DEAD_LETTER_AGE = 30 * 86_400.0  # seconds a dead letter is kept (`runtime.dead_letter_days`)
FULL_RETRY_WAIT = 1.0  # seconds between tries for room, without a retry schedule


class RetrySchedule(Protocol):
    """How long to wait before try number `attempt + 1` (`baton.runtime.backoff.Backoff`)."""

    def delay(self, attempt: int, rand: float = 0.0) -> float: ...


class SqliteStore:
    """The database behind a runtime's sqlite mailboxes; open it with `SqliteStore.open`."""

    def __init__(
        self,
        connection: sqlite3.Connection,
        path: Path,
        *,
        counts: Counts | None = None,
        dead_letter_max: int = DEAD_LETTER_MAX,
        dead_letter_age: float = DEAD_LETTER_AGE,
        retry: RetrySchedule | None = None,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        clock: Callable[[], float] = time.time,
        checkpointer: Checkpointer | None = None,
    ) -> None:
        self.path = path
        self._db = connection
        # The statements of every message share a cursor: `Connection.execute` makes one each.
        self._cursor = connection.cursor()
        self.checkpointer = checkpointer
        self._group = GroupCommit(
            connection,
            after_commit=self._write_mark,
            checkpoint_due=None if checkpointer is None else checkpointer.due,
            wrote=None if checkpointer is None else checkpointer.wrote,
        )
        if checkpointer is not None:
            checkpointer.holding_writes = self._group.alone
        self._acks = 0
        self._counts = counts  # as found at open, then `_check_mark` keeps the two below
        self._stored = self._settled = 0  # the counters, as committed
        self._marked = (-1, -1)  # (stored, settled) the mark file holds
        self._mark = MarkFile(path)
        self._dead_letter_max = dead_letter_max
        self._dead_letter_age = dead_letter_age
        self._retry = retry
        self._sleep = sleep
        self._clock = clock
        self.full: DiskFullFailure | None = None  # set while writes find no room
        self.warnings: list[str] = []  # for the process to show (lost messages)

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        path: Path,
        *,
        dead_letter_max: int = DEAD_LETTER_MAX,
        dead_letter_age: float = DEAD_LETTER_AGE,
        retry: RetrySchedule | None = None,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        clock: Callable[[], float] = time.time,
    ) -> AsyncIterator[SqliteStore]:
        """The database at `path` for the duration of the block, checked against its mark
        file (lost messages are said in `warnings`), the `-wal` a killed process left copied
        in and emptied; a damaged one raises `StateFileError` naming it. On exit it is
        closed, after what was queued before.

        Dead letters beyond `dead_letter_max` or older than `dead_letter_age` seconds are
        pruned; `retry` spaces the tries of a write waiting for disk space."""
        db, counts = await anyio.to_thread.run_sync(open_checked, path)
        try:
            async with Checkpointer.running(path) as checkpointer:
                store = cls(
                    db,
                    path,
                    counts=counts,
                    dead_letter_max=dead_letter_max,
                    dead_letter_age=dead_letter_age,
                    retry=retry,
                    sleep=sleep,
                    clock=clock,
                    checkpointer=checkpointer,
                )
                try:
                    await store.run(store._check_mark)
                    yield store
                finally:
                    with anyio.CancelScope(shield=True):
                        await store._group.alone(store._mark.close)
        finally:
            # The checkpointer's connection is closed by now: this one is the last, and SQLite
            # copies the -wal into the database and removes it as it closes.
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(db.close)

    async def run(
        self, fn: Callable[..., T], *args: object, now: bool = False, heavy: bool = False
    ) -> T:
        """Run `fn(*args)` in the transaction of the next batch (`_group_commit`): it returns
        once that transaction is committed. `now`: for a mailbox's one consumer, which waits
        for each of its operations in turn: committed at once unless a batch is gathering.
        `heavy`: it writes a large row, so its batch commits on the worker thread.

        A statement that failed for space raises `DiskFullFailure`, one that found the
        database damaged `StateFileError`, both naming the file."""
        try:
            if now:
                return await self._group.run_now(fn, *args, heavy=heavy)
            return await self._group.run(fn, *args, heavy=heavy)
        except sqlite3.Error as exc:
            found = self._failure(exc)
            if found is exc:
                raise
            raise found from exc

    def _failure(self, error: sqlite3.Error) -> Exception:
        """What a failed statement means (`translate`), a full disk noted in `full`."""
        found = translate(self.path, error)
        if isinstance(found, DiskFullFailure) and self.full is None:
            self.full = found
            log.warning("mailbox.disk_full", database=str(self.path), error=str(error))
        return found

    async def write(self, fn: Callable[..., T], *args: object, heavy: bool = False) -> T:
        """`run` for a write: refused with `DiskFullFailure` while there is no room."""
        result = await self.run(fn, *args, heavy=heavy)
        if self.full is not None:
            self._room_again()
        return result

    async def settle(
        self, fn: Callable[..., T], *args: object, now: bool = False, heavy: bool = False
    ) -> T:
        """`write` for what settles a stored message: waits for room with backoff instead of
        failing, so a full disk delays handling but loses nothing and needs no restart."""
        if now and not heavy:
            # A consumer's take or ack, committed here when nothing waits: two coroutines
            # less on the path of every message.
            done = self._group.try_now(fn, *args)
            if done is not None and done.done:
                if done.error is None:
                    if self.full is not None:
                        self._room_again()
                    return done.value
                if not isinstance(done.error, sqlite3.Error):
                    raise done.error  # the statement's own failure, not the database's
            # Waiting for a batch, for the lock or for room: the general path.
        attempt = 0
        while True:
            try:
                # `run`, not `write`: a coroutine less on the path of every message.
                result = await self.run(fn, *args, now=now, heavy=heavy)
            except DiskFullFailure:
                retry = self._retry
                await self._sleep(FULL_RETRY_WAIT if retry is None else retry.delay(attempt))
                attempt += 1
                continue
            if self.full is not None:
                self._room_again()
            return result

    def later(self, fn: Callable[..., object], *args: object) -> None:
        """Run `fn(*args)` with the next batch, or at close, without waiting for it: for
        work whose failure loses nothing (`GroupCommit.later`)."""
        self._group.later(fn, *args)

    def _room_again(self) -> None:
        self.full = None
        log.info("mailbox.disk_space_back", database=str(self.path))

    @property
    def batches(self) -> int:
        """Transactions run so far; each holds every operation queued when it was taken."""
        return self._group.batches

    # --- statements (in a transaction of the group commit) ------------------------------------

    def _check_mark(self) -> None:
        """Compare the database with the mark an earlier process left; then mark it."""
        counts = self._counts
        assert counts is not None
        loss = compare(self._mark.read(), counts)
        if loss is not None and loss.missing > 0:
            self.warnings.append(loss.describe(self.path))
            log.warning(
                "mailbox.lost",
                database=str(self.path),
                missing=loss.missing,
                forgotten=loss.forgotten,
                replaced=loss.replaced,
            )
        elif loss is not None:
            # Only handled messages are gone: some may be delivered again (ids forgotten).
            log.warning("mailbox.rewound", database=str(self.path), forgotten=loss.forgotten)
        self._mark.open()
        self._mark.write(counts.db_id, counts.stored, counts.settled)
        self._stored, self._settled = counts.stored, counts.settled
        self._marked = (counts.stored, counts.settled)

    def _stored_one(self) -> None:
        """A message stored, once committed (`on_commit`): the mark file mirrors it."""
        self._stored += 1

    def _settled_one(self) -> None:
        """A message acked or dead-lettered, once committed: the mark file mirrors it."""
        self._settled += 1

    def _write_mark(self) -> None:
        """After each commit: one write of the mark for the whole batch."""
        counts = self._counts
        marked = (self._stored, self._settled)
        if counts is not None and marked != self._marked:
            self._marked = marked
            self._mark.write(counts.db_id, *marked)

    def insert(self, envelope_id: str, recipient: str, body: str) -> int | None:
        """Store a new envelope; its seq, or None when the id is known (a duplicate)."""
        # Both checks before the insert: a conflict would still take a sequence number, and
        # the sequence is the "stored" counter.
        cursor = self._cursor.execute(
            "INSERT INTO envelopes (id, recipient, body) "
            "SELECT ?1, ?2, ?3 WHERE NOT EXISTS (SELECT 1 FROM acked WHERE id = ?1) "
            "AND NOT EXISTS (SELECT 1 FROM envelopes WHERE id = ?1) "
            "ON CONFLICT (id) DO NOTHING",
            (envelope_id, recipient, body),
        )
        if cursor.rowcount != 1:
            return None
        self._group.on_commit(self._stored_one)
        return cursor.lastrowid

    def load(self, recipient: str) -> list[tuple[int, int, int, str]]:
        """Stored envelopes for `recipient`, in send order: (seq, in_flight, deliveries, body)."""
        return self._db.execute(
            "SELECT seq, in_flight, deliveries, body FROM envelopes WHERE recipient = ? "
            "ORDER BY seq",
            (recipient,),
        ).fetchall()

    def take(self, seq: int) -> None:
        self._cursor.execute(
            "UPDATE envelopes SET in_flight = 1, deliveries = deliveries + 1 WHERE seq = ?",
            (seq,),
        )

    def release(self, seq: int) -> None:
        self._cursor.execute("UPDATE envelopes SET in_flight = 0 WHERE seq = ?", (seq,))

    def untake(self, seq: int) -> None:
        """Undo a `take` whose message was never handed out (`ack`'s `take_next`)."""
        self._cursor.execute(
            "UPDATE envelopes SET in_flight = 0, deliveries = deliveries - 1 "
            "WHERE seq = ? AND in_flight = 1",
            (seq,),
        )

    def ack(
        self,
        seq: int,
        envelope_id: str,
        take_next: int | None = None,
        taken: Callable[[], None] | None = None,
    ) -> None:
        """Delete an acked envelope, its id remembered; with `take_next`, also `take` that
        one in the same transaction, and call `taken` once that is committed."""
        execute = self._cursor.execute
        deleted = execute("DELETE FROM envelopes WHERE seq = ?", (seq,)).rowcount
        execute("INSERT OR IGNORE INTO acked (id) VALUES (?)", (envelope_id,))
        if deleted:
            self._group.on_commit(self._settled_one)
        self._acks += 1
        if self._acks % _PRUNE_EVERY == 0:
            self._db.execute(
                "DELETE FROM acked WHERE n <= (SELECT MAX(n) FROM acked) - ?", (REMEMBERED,)
            )
        if take_next is not None:
            self.take(take_next)
            if taken is not None:
                self._group.on_commit(taken)

    def bury(self, seq: int, envelope_id: str, recipient: str, reason: str, body: str) -> None:
        """Move an envelope to the dead letters with its reason, keeping an excerpt of its
        body (`dead_letter_body`); the oldest beyond the count and age limits go."""
        cut = excerpt(body)
        now = self._clock()
        deleted = self._db.execute("DELETE FROM envelopes WHERE seq = ?", (seq,)).rowcount
        self._db.execute(
            "INSERT INTO dead_letters (id, recipient, reason, body, at, size, sha256) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (envelope_id, recipient, reason, cut.text, now, cut.size, cut.sha256),
        )
        self._db.execute(
            "DELETE FROM dead_letters WHERE n <= (SELECT MAX(n) FROM dead_letters) - ? OR at < ?",
            (self._dead_letter_max, now - self._dead_letter_age),
        )
        if deleted:
            self._group.on_commit(self._settled_one)

    def dead_letters(self) -> list[tuple[str, str, str]]:
        """Every dead letter as (id, recipient, reason), oldest first."""
        return self._db.execute(
            "SELECT id, recipient, reason FROM dead_letters ORDER BY n"
        ).fetchall()

    def dead_letter_bodies(self) -> list[tuple[str, str, int, str]]:
        """Every dead letter's (id, body excerpt, body size in bytes, SHA-256), oldest first."""
        return self._db.execute(
            "SELECT id, body, size, sha256 FROM dead_letters ORDER BY n"
        ).fetchall()

    def pending(self) -> int:
        """Envelopes stored and not yet acked, across every mailbox."""
        row = self._db.execute("SELECT COUNT(*) FROM envelopes").fetchone()
        return int(row[0])
