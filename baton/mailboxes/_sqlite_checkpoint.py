"""`Checkpointer`: copies the mailbox database's `-wal` into the database and keeps that file
bounded, off every path.

The statements of the mailboxes run on the event loop (`_group_commit`), which they can afford
because a WAL commit with `synchronous=NORMAL` does not fsync. A checkpoint does (the `-wal`,
then the database), so the connection's automatic one is off and this does it instead: a task
of its own that runs each checkpoint on a worker thread with a connection of its own.

Copying is not enough to bound the `-wal`: SQLite starts it again from its beginning only when
a writer begins after a checkpoint that copied all of it, and the writers append while a
PASSIVE checkpoint copies, so under steady load that moment never comes and the file grows
by every page every commit writes (docs/architecture.md, "The SQLite mailbox on the event
loop"). So, besides the PASSIVE checkpoint asked for every so many commits:

- once the `-wal` holds `RESET_AT` bytes, that checkpoint is followed by a RESTART one, which
  copies the little the PASSIVE one left, and by a commit that starts the file again from its
  beginning (cut to `WAL_SIZE_LIMIT`, the `journal_size_limit`);
- when no transaction has committed for `IDLE` seconds, and once at open (what a killed
  process left), a TRUNCATE one empties the file.

Those two run while this process's writers wait their turn (`GroupCommit.alone`): they find
the write lock free and hold the writers only for the pages committed since the PASSIVE one.
They wait at most `BUSY_TIMEOUT_MS` for another process's lock or reader; what they cannot do
now is tried again at the next chance (the next checkpoint, the next idle). A checkpoint that
resets the `-wal` has copied and synced all of it first, so a kill at any point loses nothing
a commit had stored.
"""

from __future__ import annotations

import functools
import math
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from anyio.abc import TaskStatus

from baton._log import get_logger

log = get_logger(__name__)

IDLE = 1.0  # seconds without a commit before the -wal is emptied
# Bytes of -wal past which a checkpoint under load also restarts it. A restart holds the
# writers for the pages committed while the PASSIVE ones copied (~1-2 ms here), so it is
# paid once per 32 MiB (~850 messages taken and acked one by one), not every checkpoint.
RESET_AT = 32 * 2**20
# journal_size_limit: the most of its file a restarted -wal keeps. Above what steady load
# reaches (RESET_AT and the pages of a checkpoint interval), so under load the file is reused,
# not cut and regrown at each restart (a cut took ~1 ms more with the writers held); a -wal
# that grew past it (a reader held the restart back, say) is cut back to it. Idle, the
# TRUNCATE checkpoint empties it all the same.
WAL_SIZE_LIMIT = 2 * RESET_AT
BUSY_TIMEOUT_MS = 20  # how long a RESTART or TRUNCATE waits for another process's lock
_FRAME_HEADER = 24  # bytes before each page in the -wal


class Checkpointer:
    """Runs the checkpoints of one database; use it as `async with Checkpointer.running(path)`.

    `due` asks for the checkpoint of a number of commits, `wrote` tells of each batch committed
    (from the event loop): the idle time is counted from it."""

    def __init__(self, path: Path, *, idle: float = IDLE) -> None:
        self.path = path
        self._idle = idle
        self._db: sqlite3.Connection | None = None  # opened by the first checkpoint
        self._frame = 0  # bytes per -wal frame, known once connected
        self._wake = anyio.Event()  # set by `due`, and by the first write after emptying
        self._asked = False  # a checkpoint is due
        self._writes = 0  # batches committed, as told by `wrote`
        self._empty = False  # the -wal was emptied and nothing was written since
        self.done = 0  # checkpoints run since the block began
        self.emptied = 0  # of which emptied the -wal (TRUNCATE)
        self.finished = anyio.Event()  # set as each checkpoint ends (then a new one)
        # Runs a function on a worker thread while this process's writers wait their turn
        # (`GroupCommit.alone`, set by the store): a RESTART or TRUNCATE then finds the write
        # lock free, and the writers wait in memory for the few pages it copies instead of
        # finding the database locked (`_group_commit`, "another writer").
        self.holding_writes: Callable[[Callable[[], bool]], Awaitable[bool]] | None = None

    @classmethod
    @asynccontextmanager
    async def running(cls, path: Path, *, idle: float = IDLE) -> AsyncIterator[Checkpointer]:
        """A checkpointer serving `path` for the duration of the block, once it has emptied
        the -wal an earlier process left; on exit, a checkpoint under way finishes and the
        connection closes."""
        checkpointer = cls(path, idle=idle)
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
        self._asked = True
        self._wake.set()

    def wrote(self) -> None:
        """A batch was committed: the idle time starts again (called on the event loop)."""
        self._writes += 1
        if self._empty:
            self._empty = False
            self._wake.set()

    async def _serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        # After a kill nothing emptied the -wal, and the writers would append to it: a file
        # that grows from one start to the next. No writer runs yet.
        self._empty = await anyio.to_thread.run_sync(self._reset, "TRUNCATE")
        task_status.started()
        while True:
            seen = self._writes
            # Emptied: nothing to do before a write. Else a commit or none for `_idle` s.
            with anyio.move_on_after(math.inf if self._empty else self._idle):
                await self._wake.wait()
            self._wake = anyio.Event()
            if self._asked:
                self._asked = False
                await self._checkpoint(None)
            elif not self._empty and self._writes == seen:
                # Idle. One that cannot empty it now (a reader, say) tries at the next idle.
                await self._checkpoint("TRUNCATE")

    async def _checkpoint(self, reset: str | None) -> None:
        """A PASSIVE checkpoint, then `reset` (or RESTART when the -wal is past `RESET_AT`)."""
        writes = self._writes
        # Not cancellable once started (the default): it ends before the block does.
        frames = await anyio.to_thread.run_sync(self._passive)
        if reset is None and frames * self._frame >= RESET_AT:
            # Once more first: it copies what was committed while the first one copied, so
            # the writers are held for less.
            await anyio.to_thread.run_sync(self._passive)
            reset = "RESTART"
        if reset is not None:
            held = self.holding_writes
            if held is None:
                emptied = await anyio.to_thread.run_sync(self._reset, reset)
            else:
                emptied = await held(functools.partial(self._reset, reset))
            if emptied:
                self.emptied += 1
                self._empty = self._writes == writes
        self.done += 1
        finished, self.finished = self.finished, anyio.Event()
        finished.set()

    def _passive(self) -> int:
        """Copy what the -wal holds, writers going on; the frames it holds. On the thread."""
        try:
            frames: int = self._connection().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
        except sqlite3.Error as exc:
            # A full disk, say: the -wal only grows until the next checkpoint succeeds.
            log.warning("mailbox.checkpoint_failed", database=str(self.path), error=str(exc))
            return 0
        return frames

    def _reset(self, mode: str) -> bool:
        """A RESTART or TRUNCATE checkpoint; whether it emptied the -wal. On the thread."""
        try:
            db = self._connection()
            busy = db.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()[0]
            if mode == "RESTART" and busy == 0:
                _begin_again(db)
        except sqlite3.Error as exc:
            log.warning("mailbox.checkpoint_failed", database=str(self.path), error=str(exc))
            return False
        return mode == "TRUNCATE" and busy == 0

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            # As the event loop's connection: its one commit (`_begin_again`) syncs only the
            # header of the -wal, which is what makes it durable.
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
            self._frame = db.execute("PRAGMA page_size").fetchone()[0] + _FRAME_HEADER
            self._db = db
        return self._db


def _begin_again(db: sqlite3.Connection) -> None:
    """Make the first commit into a restarted -wal, one that changes nothing.

    That commit writes the file's new header and syncs it (SQLite does, with
    `synchronous=NORMAL`) and cuts the file to `WAL_SIZE_LIMIT`: made here, on the worker
    thread while the writers wait their turn, not by the next commit on the event loop."""
    db.execute("BEGIN IMMEDIATE")
    try:
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        db.execute(f"PRAGMA user_version={version}")
        db.execute("COMMIT")
    except sqlite3.Error:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
