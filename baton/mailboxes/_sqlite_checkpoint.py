"""`Checkpointer`: copies the mailbox database's `-wal` into the database, off every path.

The statements of the mailboxes run on the event loop (`_group_commit`), which they can afford
because a WAL commit with `synchronous=NORMAL` does not fsync. A checkpoint does (the `-wal`,
then the database), so the connection's automatic one is off and this does it instead: a task
of its own that, when told one is due, runs a PASSIVE checkpoint on a worker thread with a
connection of its own. PASSIVE neither waits for nor blocks the writers; what it cannot copy
now, the next one does (docs/architecture.md, "mailboxes/").
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import structlog
from anyio.abc import TaskStatus

log = structlog.get_logger(__name__)


class Checkpointer:
    """Runs the checkpoints of one database; use it as `async with Checkpointer.running(path)`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None  # opened by the first checkpoint
        self._due = anyio.Event()
        self.done = 0  # checkpoints run
        self.finished = anyio.Event()  # set as each checkpoint ends (then a new one)

    @classmethod
    @asynccontextmanager
    async def running(cls, path: Path) -> AsyncIterator[Checkpointer]:
        """A checkpointer serving `path` for the duration of the block; on exit, a checkpoint
        under way finishes and the connection closes."""
        checkpointer = cls(path)
        try:
            async with anyio.create_task_group() as tasks:
                await tasks.start(checkpointer._serve)
                try:
                    yield checkpointer
                finally:
                    tasks.cancel_scope.cancel()
        finally:
            if checkpointer._db is not None:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(checkpointer._db.close)

    def due(self) -> None:
        """Ask for a checkpoint (without waiting for it); asks while one runs make one more."""
        self._due.set()

    async def _serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self._due.wait()
            self._due = anyio.Event()
            # Not cancellable once started (the default): it ends before the block does.
            await anyio.to_thread.run_sync(self._checkpoint)
            self.done += 1
            finished, self.finished = self.finished, anyio.Event()
            finished.set()

    def _checkpoint(self) -> None:
        try:
            if self._db is None:
                self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as exc:
            # A full disk, say: the -wal only grows until the next checkpoint succeeds.
            log.warning("mailbox.checkpoint_failed", database=str(self.path), error=str(exc))
