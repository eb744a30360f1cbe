"""Group commit: the SQLite mailbox's statements, a batch per transaction, on the event loop.

In WAL mode with `synchronous=NORMAL` a commit appends pages to the `-wal` file and does not
fsync (only a checkpoint does), so it takes tens of microseconds: less than one hop to a worker
thread and back (docs/architecture.md, "mailboxes/"). The transactions therefore run on the
event loop, and only what can wait on the disk or on another process goes to a worker thread:
a batch that finds the database locked by another connection (it waits there, with the busy
timeout), a batch that writes a large row (`heavy`: copying megabytes takes milliseconds),
opening and closing; checkpoints, which fsync, are asked of `_sqlite_checkpoint`
every `CHECKPOINT_EVERY` transactions (the connection's automatic one is off), and it is told
of each batch, so that it empties the `-wal` once they stop.

Callers queue their operation and take turns; taking the turn yields once, so every caller
that is ready queues its operation first and the one whose turn it is commits them all: one
`BEGIN IMMEDIATE ... COMMIT`; the callers it held then go on together. If one operation of a
batch raises, the batch is undone and its operations run again one transaction each, so a
failing statement undoes only itself. A caller's `run` returns only once the transaction
holding its operation is committed, so a `tell` is durable when it returns, exactly as with a
commit per operation. A caller that finds no batch gathering (a mailbox's consumer, `try_now`)
commits at once, without the yield.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import anyio

T = TypeVar("T")

_UNSET: Any = object()
BUSY_TIMEOUT_MS = 5_000  # how long a batch waits, on the worker thread, for another writer
CHECKPOINT_EVERY = 256  # committed transactions between two checkpoints (~1,000 pages)


@dataclass(slots=True)
class Operation(Generic[T]):
    """One call waiting for, or done by, a batch: its outcome is a value or an exception."""

    fn: Callable[..., T]
    args: tuple[object, ...]
    heavy: bool = False
    value: T = _UNSET
    error: BaseException | None = None
    after_commit: list[Callable[[], None]] | None = None  # made by the first `on_commit`

    @property
    def done(self) -> bool:
        return self.error is not None or self.value is not _UNSET

    def outcome(self) -> T:
        if self.error is not None:
            raise self.error
        return self.value


class _Busy(Exception):
    """Another connection holds the write lock: the batch must wait off the event loop."""


def _is_busy(error: sqlite3.Error) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


class GroupCommit:
    """Runs operations on `connection`, a batch per transaction, on the event loop.

    The connection must be in autocommit mode with `busy_timeout = 0` and no automatic
    checkpoint: `checkpoint_due` is called every `checkpoint_every` committed transactions
    and `wrote` after each batch, both on the event loop, and they must not wait (they tell
    `_sqlite_checkpoint`, which also empties the -wal once no batch came for a while). An
    operation may register work for after its commit with `on_commit` (the mark file mirrors
    committed counters only); that work is dropped when the operation or the commit fails.
    `after_commit` runs once after each committed transaction.
    """

    def __init__(
        self,
        connection: sqlite3.Connection,
        *,
        after_commit: Callable[[], None] | None = None,
        checkpoint_due: Callable[[], None] | None = None,
        checkpoint_every: int = CHECKPOINT_EVERY,
        wrote: Callable[[], None] | None = None,
    ) -> None:
        self._db = connection
        # One cursor for BEGIN and COMMIT: `Connection.execute` makes a new one each time.
        self._cursor = connection.cursor()
        self._after_commit = after_commit
        self._checkpoint_due = checkpoint_due
        self._checkpoint_every = checkpoint_every
        self._wrote = wrote
        self._since_checkpoint = 0
        self._queue: list[Operation[Any]] = []
        # Acquiring it yields once: callers that are ready queue theirs before the batch is
        # taken. The others wait for `_ended`, set as each holder lets go: those whose
        # operation is done go on all at once, not one by one through the lock.
        self._turn = anyio.Lock()
        self._ended = anyio.Event()
        self._current: Operation[Any] | None = None
        self.batches = 0  # transactions begun (then committed or rolled back), for benchmarks
        self.waited = 0  # batches that found the database locked and waited on the thread

    async def run(self, fn: Callable[..., T], *args: object, heavy: bool = False) -> T:
        """`fn(*args)` inside a transaction, batched with those of every caller that is
        ready; its value once committed. `heavy`: it writes a large row, so its batch is
        committed on the worker thread."""
        operation: Operation[T] = Operation(fn, args, heavy)
        self._queue.append(operation)
        return await self._in_turn(operation)

    async def run_now(self, fn: Callable[..., T], *args: object, heavy: bool = False) -> T:
        """`run` for a caller that goes on only once it is done (a mailbox's one consumer):
        committed at once when no batch is being gathered, without the yield that gathers."""
        tried = None if heavy else self.try_now(fn, *args)
        if tried is not None and tried.done:
            return tried.outcome()
        turn = self._turn
        if tried is not None:  # the database is locked: wait for it on the thread
            batch = [tried]
        else:
            operation: Operation[T] = Operation(fn, args, heavy)
            if turn.locked():
                self._queue.append(operation)
                return await self._in_turn(operation)
            batch, self._queue = self._queue, []  # with the turn free, only `later`'s wait
            batch.append(operation)
        turn.acquire_nowait()
        try:
            await self._commit(batch, busy=tried is not None)
        finally:
            turn.release()
            self._let_go()
        return batch[-1].outcome()

    def try_now(self, fn: Callable[..., T], *args: object) -> Operation[T] | None:
        """`fn(*args)` committed at once, in a transaction of its own, when nothing waits for
        the turn: the operation, done (its outcome may be an error) unless another connection
        holds the lock; None when a batch is being gathered (`run_now` waits for it). The
        path of every take and ack of a mailbox's consumer: no wait, so no turn to take."""
        if self._queue or self._turn.locked():
            return None
        operation: Operation[T] = Operation(fn, args)
        try:
            self._commit_now([operation])
        except _Busy:  # nothing done: BEGIN found the lock taken
            return operation
        self._committed()
        return operation

    def later(self, fn: Callable[..., object], *args: object) -> None:
        """Queue `fn(*args)` without waiting for it (from code that may not wait): it joins
        the next batch, or the one `alone` commits first at close. Its outcome is nobody's:
        it must be work whose failure loses nothing."""
        self._queue.append(Operation(fn, args))

    async def _in_turn(self, operation: Operation[T]) -> T:
        turn = self._turn
        try:
            while not operation.done:
                if turn.locked():
                    await self._ended.wait()
                    continue
                async with turn:
                    try:
                        if not operation.done:
                            batch, self._queue = self._queue, []
                            await self._commit(batch)
                    finally:
                        self._let_go()
        except BaseException:
            if operation in self._queue:  # cancelled before any batch took it: never runs
                self._queue.remove(operation)
            raise
        return operation.outcome()

    def _let_go(self) -> None:
        """The turn's holder is done: wake every caller waiting for it."""
        ended, self._ended = self._ended, anyio.Event()
        ended.set()

    async def alone(self, fn: Callable[..., T], *args: object) -> T:
        """`fn(*args)` on the worker thread outside any transaction, after every operation
        queued before it, the callers that come meanwhile waiting their turn (closing the
        connection; a checkpoint that resets the -wal, `_sqlite_checkpoint`)."""
        async with self._turn:
            try:
                if self._queue:
                    batch, self._queue = self._queue, []
                    await self._commit(batch)
                return await anyio.to_thread.run_sync(fn, *args)
            finally:
                self._let_go()

    def on_commit(self, action: Callable[[], None]) -> None:
        """Run `action` once the running operation is committed."""
        current = self._current
        assert current is not None, "on_commit outside an operation"
        if current.after_commit is None:
            current.after_commit = [action]
        else:
            current.after_commit.append(action)

    async def _commit(self, batch: list[Operation[Any]], *, busy: bool = False) -> None:
        """Commit `batch`; `busy`: a try on the event loop found the database locked."""
        try:
            if busy:
                raise _Busy
            if any(operation.heavy for operation in batch):
                # Copying a large row into the -wal takes milliseconds: every actor would
                # wait for it (docs/architecture.md, "What a request body may cost").
                await anyio.to_thread.run_sync(self._commit_waiting, batch)
            else:
                self._commit_now(batch)
        except _Busy:
            self.waited += 1
            # The turn is held meanwhile: nothing else uses the connection.
            await anyio.to_thread.run_sync(self._commit_waiting, batch)
        self._committed()

    def _committed(self) -> None:
        """After each batch: tell the checkpointer, and ask for a checkpoint when due."""
        if self._wrote is not None:
            self._wrote()
        if self._since_checkpoint >= self._checkpoint_every and self._checkpoint_due is not None:
            self._since_checkpoint = 0
            self._checkpoint_due()

    def _commit_waiting(self, batch: list[Operation[Any]]) -> None:
        """`_commit_now` on the worker thread, waiting for the write lock as long as the busy
        timeout allows (the event loop meanwhile goes on)."""
        self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        try:
            # Those committed before the lock was found taken are done already.
            self._commit_now([op for op in batch if not op.done], waiting=True)
        finally:
            self._db.execute("PRAGMA busy_timeout = 0")

    def _commit_now(self, batch: list[Operation[Any]], *, waiting: bool = False) -> None:
        if len(batch) > 1 and self._transaction(batch, alone=False, waiting=waiting):
            return
        # One operation, or a batch one of whose operations failed: each in a transaction of
        # its own, so a failing statement undoes only itself (rare: the statements expect
        # duplicates and missing rows).
        for operation in batch:
            self._transaction([operation], alone=True, waiting=waiting)

    def _transaction(self, batch: list[Operation[Any]], *, alone: bool, waiting: bool) -> bool:
        """Run `batch` in one transaction; False (all undone, nothing reported) when an
        operation of a shared batch failed. Raises `_Busy` when another connection holds
        the write lock and this is not the waiting run."""
        for operation in batch:
            operation.value, operation.error, operation.after_commit = _UNSET, None, None
        try:
            try:
                self._cursor.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                if not waiting and _is_busy(exc):
                    raise _Busy from exc
                raise
            self.batches += 1
            for operation in batch:
                self._current = operation
                try:
                    operation.value = operation.fn(*operation.args)
                except Exception as exc:  # noqa: BLE001 - the caller's outcome, raised there
                    self._rollback()  # undoes what the failed operation did before it raised
                    if not alone:
                        for undone in batch:
                            undone.value = _UNSET
                        return False
                    operation.error, operation.after_commit = exc, None
                    return True
                finally:
                    self._current = None
            self._cursor.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            for operation in batch:
                operation.error, operation.after_commit = exc, None
            return True
        self._since_checkpoint += 1
        for operation in batch:
            if operation.after_commit is not None:
                for action in operation.after_commit:
                    action()
        if self._after_commit is not None:
            self._after_commit()
        return True

    def _rollback(self) -> None:
        # SQLite may have rolled back by itself already (a full disk can make it).
        if self._db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
