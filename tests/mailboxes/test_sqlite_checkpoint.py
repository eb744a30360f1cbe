"""Checkpoints of the mailbox database: asked for every so many commits and run on a thread
with a connection of their own, never by the event loop's connection; closing leaves no -wal."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
from pydantic import BaseModel

from baton.mailboxes import Envelope
from baton.mailboxes._group_commit import CHECKPOINT_EVERY
from baton.mailboxes._sqlite_checkpoint import Checkpointer
from baton.mailboxes.codec import EnvelopeCodec
from baton.mailboxes.sqlite import SqliteMailbox, SqliteStore


class Ping(BaseModel):
    n: int


CODEC = EnvelopeCodec({"Ping": Ping})


def _wal_exists(path: Path) -> bool:
    return Path(f"{path}-wal").exists()


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
