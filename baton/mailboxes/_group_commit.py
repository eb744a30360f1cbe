"""Group commit: the SQLite mailbox's statements, batched into one transaction per hop.

Every statement of the store runs on one worker thread. A hop to that thread costs far more
than a WAL commit, so operations that arrive while a batch is on the thread wait for it to
end and then go together: one hop, one `BEGIN IMMEDIATE ... COMMIT`. If one operation of a
batch raises, the batch is undone and its operations run again one transaction each, so a
failing statement undoes only itself. A caller's `run` returns
only once the transaction holding its operation is committed, so a `tell` is durable when it
returns, exactly as with a commit per operation (docs/architecture.md, "mailboxes/").
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import anyio

T = TypeVar("T")

_UNSET: Any = object()


@dataclass(slots=True)
class Operation(Generic[T]):
    """One call waiting for, or done by, a batch: its outcome is a value or an exception."""

    fn: Callable[..., T]
    args: tuple[object, ...]
    value: T = _UNSET
    error: BaseException | None = None
    after_commit: list[Callable[[], None]] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return self.error is not None or self.value is not _UNSET

    def outcome(self) -> T:
        if self.error is not None:
            raise self.error
        return self.value


class GroupCommit:
    """Runs operations on `connection` from one worker thread, a batch per transaction.

    An operation may register work for after its commit with `on_commit` (the mark file
    mirrors committed counters only); that work is dropped when the operation or the commit
    fails. `after_commit` runs once after each committed transaction.
    """

    def __init__(
        self, connection: sqlite3.Connection, *, after_commit: Callable[[], None] | None = None
    ) -> None:
        self._db = connection
        self._after_commit = after_commit
        self._queue: list[Operation[Any]] = []
        # FIFO: a caller that finds its operation already done by an earlier batch only
        # passes through.
        self._turn = anyio.Lock()
        self._limiter = anyio.CapacityLimiter(1)
        self._current: Operation[Any] | None = None
        self.batches = 0  # transactions committed or rolled back, for tests and benchmarks

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        """`fn(*args)` inside a transaction on the worker thread; its value once committed."""
        operation: Operation[T] = Operation(fn, args)
        self._queue.append(operation)
        try:
            async with self._turn:
                if not operation.done:
                    batch, self._queue = self._queue, []
                    await anyio.to_thread.run_sync(self._commit, batch, limiter=self._limiter)
        except BaseException:
            if operation in self._queue:  # cancelled before any batch took it: never runs
                self._queue.remove(operation)
            raise
        return operation.outcome()

    async def alone(self, fn: Callable[..., T], *args: object) -> T:
        """`fn(*args)` on the worker thread outside any transaction (closing the connection),
        after every operation queued before it."""
        async with self._turn:
            if self._queue:
                batch, self._queue = self._queue, []
                await anyio.to_thread.run_sync(self._commit, batch, limiter=self._limiter)
            return await anyio.to_thread.run_sync(fn, *args, limiter=self._limiter)

    def on_commit(self, action: Callable[[], None]) -> None:
        """Run `action` on the worker thread once the running operation is committed."""
        assert self._current is not None, "on_commit outside an operation"
        self._current.after_commit.append(action)

    # --- worker thread ---------------------------------------------------------------------

    def _commit(self, batch: list[Operation[Any]]) -> None:
        self.batches += 1
        if len(batch) > 1 and self._transaction(batch, alone=False):
            return
        # One operation, or a batch one of whose operations failed: each in a transaction of
        # its own, so a failing statement undoes only itself (rare: the statements expect
        # duplicates and missing rows).
        for operation in batch:
            self._transaction([operation], alone=True)

    def _transaction(self, batch: list[Operation[Any]], *, alone: bool) -> bool:
        """Run `batch` in one transaction; False (all undone, nothing reported) when an
        operation of a shared batch failed."""
        for operation in batch:
            operation.value, operation.error = _UNSET, None
            operation.after_commit.clear()
        try:
            self._db.execute("BEGIN IMMEDIATE")
            for operation in batch:
                self._current = operation
                try:
                    operation.value = operation.fn(*operation.args)
                except Exception as exc:  # noqa: BLE001 - the caller's outcome, raised there
                    self._rollback()  # undoes what the failed operation did before it raised
                    if not alone:
                        return False
                    operation.error = exc
                    operation.after_commit.clear()
                    return True
                finally:
                    self._current = None
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            for operation in batch:
                operation.error = exc
                operation.after_commit.clear()
            return True
        for operation in batch:
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
