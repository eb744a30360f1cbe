"""Checkpoints of the mailbox database: asked for every so many commits and run on a thread
with a connection of their own, never by the event loop's connection; closing leaves no -wal.
The -wal stays bounded under load, is emptied once the mailboxes are idle, and what a killed
process left is emptied at open."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import anyio
from pydantic import BaseModel

from baton.mailboxes import Envelope
from baton.mailboxes._group_commit import CHECKPOINT_EVERY
from baton.mailboxes._sqlite_checkpoint import Checkpointer
from baton.mailboxes._sqlite_open import open_checked
from baton.mailboxes.codec import EnvelopeCodec
from baton.mailboxes.sqlite import SqliteMailbox, SqliteStore


class Ping(BaseModel):
    n: int


CODEC = EnvelopeCodec({"Ping": Ping})
MiB = 2**20


def _wal_exists(path: Path) -> bool:
    return Path(f"{path}-wal").exists()


def _wal_size(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return wal.stat().st_size if wal.exists() else 0


def _backfilled(path: Path) -> int:
    """Pages of the database file itself (what checkpoints have copied out of the -wal)."""
    return path.stat().st_size // 4096


async def test_commits_past_the_interval_get_a_checkpoint_and_close_removes_the_wal(
    tmp_path: Path,
) -> None:
    """The store's own connection never checkpoints (its automatic checkpoint is off), yet
    after more than CHECKPOINT_EVERY commits the database file has grown by a checkpoint the
    store asked for; after the block the -wal is gone (copied in by the last close)."""
    path = tmp_path / "m.sqlite3"
    async with SqliteStore.open(path) as store:
        box = SqliteMailbox("box", store, CODEC, capacity=CHECKPOINT_EVERY * 2)
        automatic = await store.run(
            lambda: store._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        )
        before = _backfilled(path)
        for n in range(CHECKPOINT_EVERY + 8):
            await box.send(Envelope("box", Ping(n=n)))  # one commit each: sent one by one
        checkpointer = store.checkpointer
        assert checkpointer is not None
        with anyio.fail_after(5):
            while checkpointer.done < 1:
                await checkpointer.finished.wait()
        after = _backfilled(path)
        wal_open = _wal_exists(path)
    with sqlite3.connect(path) as db:
        stored = db.execute("SELECT COUNT(*) FROM envelopes").fetchone()[0]
    db.close()
    assert (0, True, False) == (automatic, wal_open, _wal_exists(path))
    assert after > before
    assert CHECKPOINT_EVERY + 8 == stored


async def test_a_checkpoint_asked_for_runs_once_even_when_asked_twice(tmp_path: Path) -> None:
    """Asks that arrive before the checkpointer gets to them make one checkpoint, not one
    each; a later ask makes another."""
    path = tmp_path / "c.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE t (n INTEGER)")
    db.close()
    async with Checkpointer.running(path) as checkpointer:
        checkpointer.due()
        checkpointer.due()
        with anyio.fail_after(5):
            await checkpointer.finished.wait()
        first = checkpointer.done
        checkpointer.due()
        with anyio.fail_after(5):
            await checkpointer.finished.wait()
    assert (1, 2) == (first, checkpointer.done)


async def test_the_wal_stays_bounded_under_load_and_is_emptied_once_idle(tmp_path: Path) -> None:
    """20,000 messages told and drained as the runtime does (a hundred tells at once, then
    each taken and acked in turn) never grow the -wal past 64 MiB (sampled after every
    hundred), and within 10 s of the last one it is down to 8 MiB at most."""
    path = tmp_path / "m.sqlite3"
    batch = 100
    peak = 0
    async with SqliteStore.open(path) as store:
        box = SqliteMailbox("box", store, CODEC, capacity=batch)
        for first in range(0, 20_000, batch):
            async with anyio.create_task_group() as senders:
                for n in range(first, first + batch):
                    senders.start_soon(box.send, Envelope("box", Ping(n=n)))
            for _ in range(batch):
                await box.ack(await box.receive())
            peak = max(peak, _wal_size(path))
        checkpointer = store.checkpointer
        assert checkpointer is not None
        with anyio.move_on_after(10):
            while _wal_size(path) > 8 * MiB:
                await checkpointer.finished.wait()
        idle = _wal_size(path)
    assert (True, True) == (peak <= 64 * MiB, idle <= 8 * MiB), f"peak {peak}, idle {idle}"


async def test_a_large_wal_left_by_a_killed_process_is_emptied_at_open(tmp_path: Path) -> None:
    """A database whose -wal a killed process left at many MiB (copied while its connection
    is open, as a kill leaves it) has it copied in and emptied before the store is handed
    out, every message still there."""
    live, left = tmp_path / "live.sqlite3", tmp_path / "left" / "m.sqlite3"
    left.parent.mkdir()
    db, _ = open_checked(live)  # the mailbox schema; no automatic checkpoint
    for n in range(1_000):
        db.execute(
            "INSERT INTO envelopes (id, recipient, body) VALUES (?, 'box', ?)",
            (str(n), "x" * 10_000),
        )
    for suffix in ("", "-wal", "-shm"):
        shutil.copy(f"{live}{suffix}", f"{left}{suffix}")
    db.close()
    before = _wal_size(left)
    async with SqliteStore.open(left) as store:
        at_open = _wal_size(left)
        pending = await store.run(store.pending)
    assert (True, 0, 1_000) == (before > 16 * MiB, at_open, pending)


async def test_an_idle_truncation_a_reader_prevents_is_tried_again_at_the_next_idle(
    tmp_path: Path,
) -> None:
    """While another connection reads from the -wal, the checkpoint at idle cannot empty it
    and leaves it; once the reader is done, the next idle empties it without another write."""
    path = tmp_path / "r.sqlite3"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("CREATE TABLE t (n INTEGER)")
    reader = sqlite3.connect(path, isolation_level=None)
    try:
        async with Checkpointer.running(path, idle=0.05) as checkpointer:
            writer.execute("INSERT INTO t VALUES (1)")
            reader.execute("BEGIN")
            reader.execute("SELECT COUNT(*) FROM t").fetchone()  # a snapshot in the -wal
            checkpointer.wrote()
            with anyio.fail_after(5):
                await checkpointer.finished.wait()
            blocked = (checkpointer.emptied, _wal_size(path) > 0)
            reader.execute("COMMIT")
            with anyio.fail_after(5):
                while checkpointer.emptied == 0:
                    await checkpointer.finished.wait()
            after = _wal_size(path)
    finally:
        reader.close()
        writer.close()
    assert ((0, True), 0) == (blocked, after)
