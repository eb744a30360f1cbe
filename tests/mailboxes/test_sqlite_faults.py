"""SqliteStore under faults: bounded dead letters, damaged files said in one line, lost
messages noticed against the mark file, and a full disk that refuses sends and waits."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from structlog.testing import capture_logs

from baton.errors import DiskFullFailure, StateFileError
from baton.mailboxes import Envelope
from baton.mailboxes.codec import EnvelopeCodec
from baton.mailboxes.sqlite import SqliteMailbox, SqliteStore
from tests.mailboxes.faults import FullDisk, Room
from tests.mailboxes.sinks import Sink


class Ping(BaseModel):
    n: int
    text: str = ""


CODEC = EnvelopeCodec({"Ping": Ping})


def ping(n: int, text: str = "") -> Envelope:
    return Envelope("box", Ping(n=n, text=text))


@asynccontextmanager
async def box_in(store: SqliteStore, sink: Sink | None = None) -> AsyncIterator[SqliteMailbox]:
    yield SqliteMailbox("box", store, CODEC, capacity=64, dead_letters=sink)


async def bury_all(store: SqliteStore, *envelopes: Envelope) -> None:
    async with box_in(store) as box:
        for envelope in envelopes:
            await box.send(envelope)
            await box.nack(await box.receive(), requeue=False, reason="refused")


# --- dead letters ----------------------------------------------------------------------------


async def test_a_dead_letter_keeps_an_excerpt_its_size_and_hash_not_the_body(
    tmp_path: Path,
) -> None:
    """A 1 MB message that is refused leaves 4 KB of it in `dead_letters`, with the whole
    body's size and SHA-256."""
    async with SqliteStore.open(tmp_path / "m.sqlite3") as store:
        big = ping(1, "x" * 1_000_000)
        await bury_all(store, big)
        rows = await store.run(store.dead_letter_bodies)
    body = CODEC.encode(big).encode()
    ((_, excerpt, size, sha256),) = rows
    assert (4096, len(body), hashlib.sha256(body).hexdigest()) == (
        len(excerpt.encode()),
        size,
        sha256,
    )
    assert body.startswith(excerpt.encode())


async def test_dead_letters_are_pruned_by_count_and_by_age(tmp_path: Path) -> None:
    """Beyond `dead_letter_max` the oldest go; one older than `dead_letter_age` goes too."""
    now = [1000.0]
    async with SqliteStore.open(
        tmp_path / "m.sqlite3", dead_letter_max=3, dead_letter_age=60, clock=lambda: now[0]
    ) as store:
        await bury_all(store, *(ping(n) for n in range(5)))
        by_count = [row[0] for row in await store.run(store.dead_letters)]
        now[0] += 61
        latest = ping(9)
        await bury_all(store, latest)
        by_age = [row[0] for row in await store.run(store.dead_letters)]
    assert 3 == len(by_count)
    assert [latest.id] == by_age


async def test_dead_letters_of_an_older_database_are_cut_at_open(tmp_path: Path) -> None:
    """A database written before excerpts existed has its dead letters' bodies cut to the
    excerpt when it is opened, with their size and hash."""
    db = tmp_path / "m.sqlite3"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE dead_letters (n INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, "
            "recipient TEXT NOT NULL, reason TEXT NOT NULL, body TEXT NOT NULL, at REAL NOT NULL)"
        )
        conn.execute(
            "INSERT INTO dead_letters (id, recipient, reason, body, at) "
            "VALUES ('a', 'box', 'refused', ?, 1.0)",
            ("y" * 50_000,),
        )
    conn.close()
    async with SqliteStore.open(db) as store:
        rows = await store.run(store.dead_letter_bodies)
    assert [("a", "y" * 4096, 50_000, hashlib.sha256(b"y" * 50_000).hexdigest())] == rows


# --- damaged files ---------------------------------------------------------------------------


def _database_with_pages(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE filler (n INTEGER PRIMARY KEY, text TEXT)")
        conn.executemany("INSERT INTO filler (text) VALUES (?)", [("z" * 900,) for _ in range(200)])
    conn.close()


def garbage_page(path: Path) -> None:
    _database_with_pages(path)
    with path.open("r+b") as file:
        file.seek(4096 * 3)
        file.write(bytes(range(256)) * 16)


def truncated(path: Path) -> None:
    _database_with_pages(path)
    with path.open("r+b") as file:
        file.truncate(path.stat().st_size // 2)


def not_a_database(path: Path) -> None:
    path.write_bytes(b"this is not a database, just bytes\n" * 300)


def a_directory(path: Path) -> None:
    path.mkdir()


@pytest.mark.parametrize("damage", [garbage_page, truncated, not_a_database, a_directory])
async def test_a_damaged_database_is_one_line_naming_it_and_what_to_do(
    tmp_path: Path, damage: Any
) -> None:
    """Opening a damaged database raises one StateFileError naming the file and the command
    that moves it aside, instead of a sqlite3 traceback later."""
    db = tmp_path / "m.sqlite3"
    damage(db)
    with pytest.raises(StateFileError) as refused:
        async with SqliteStore.open(db):
            pass
    message = str(refused.value)
    assert (True, True, 1) == (
        message.startswith(f"{db} "),
        f"mv {db} {db}.damaged" in message,
        len(message.splitlines()),
    )


# --- lost messages ---------------------------------------------------------------------------


async def store_unhandled(db: Path, count: int) -> None:
    async with SqliteStore.open(db) as store, box_in(store) as box:
        for n in range(count):
            await box.send(ping(n))


def remove_database(db: Path) -> None:
    for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        path.unlink(missing_ok=True)


async def test_a_deleted_database_with_queued_messages_is_reported(tmp_path: Path) -> None:
    """21 messages queued, then the database is deleted: the next open says 21 are lost, in
    `warnings` and a `mailbox.lost` log line; the open after that says nothing more."""
    db = tmp_path / "m.sqlite3"
    await store_unhandled(db, 21)
    remove_database(db)
    with capture_logs() as logs:
        async with SqliteStore.open(db) as store:
            warnings = store.warnings
        async with SqliteStore.open(db) as again:
            pass
    lost = [entry for entry in logs if entry["event"] == "mailbox.lost"]
    assert [(21, True)] == [(entry["missing"], entry["replaced"]) for entry in lost]
    assert 1 == len(warnings)
    assert "21 queued message(s) are lost" in warnings[0]
    assert [] == again.warnings


async def test_a_database_gone_back_to_an_older_state_is_reported(tmp_path: Path) -> None:
    """A database that lost its newest commits (as when its -wal goes after a kill) reports
    the queued messages it no longer holds; handled ones are not counted as lost."""
    db = tmp_path / "m.sqlite3"
    backup = tmp_path / "old"
    backup.mkdir()
    async with SqliteStore.open(db) as store, box_in(store) as box:
        for n in range(3):
            await box.send(ping(n))
        await box.ack(await box.receive())
        for suffix in ("", "-wal", "-shm"):
            shutil.copy(f"{db}{suffix}", backup / f"m.sqlite3{suffix}")
        for n in range(3, 8):
            await box.send(ping(n))
        await box.ack(await box.receive())
    remove_database(db)
    for suffix in ("", "-wal", "-shm"):
        shutil.copy(backup / f"m.sqlite3{suffix}", f"{db}{suffix}")
    with capture_logs() as logs:
        async with SqliteStore.open(db) as store:
            pass
    (lost,) = [entry for entry in logs if entry["event"] == "mailbox.lost"]
    # 6 queued at the end against 2 in the copy: at least 4 are gone (5 were sent since).
    assert (4, 5, False) == (lost["missing"], lost["forgotten"], lost["replaced"])
    assert "at least 4 queued message(s) are lost" in store.warnings[0]


async def test_a_first_start_and_a_clean_restart_report_nothing(tmp_path: Path) -> None:
    """No mark file yet, or a database that matches it: no warning, no `mailbox.lost`."""
    db = tmp_path / "m.sqlite3"
    with capture_logs() as logs:
        await store_unhandled(db, 3)
        async with SqliteStore.open(db) as store:
            pass
    assert ([], []) == (store.warnings, [e for e in logs if e["event"] == "mailbox.lost"])


# --- disk full -------------------------------------------------------------------------------


async def test_a_full_disk_refuses_sends_and_settling_waits_for_room(tmp_path: Path) -> None:
    """While the disk is full a send raises DiskFullFailure naming the database; an ack waits
    (nothing lost, no error) and goes through once there is room, as do sends again."""
    db = tmp_path / "m.sqlite3"
    room = Room()
    async with SqliteStore.open(db, sleep=room) as store:
        disk = FullDisk(store)
        async with box_in(store) as box:
            await box.send(ping(1))
            await box.send(ping(2))
            taken = await box.receive()
            disk.on = True
            with pytest.raises(DiskFullFailure) as refused:
                await box.send(ping(3))
            async with anyio.create_task_group() as tg:
                tg.start_soon(box.ack, taken)
                with anyio.fail_after(5):
                    await room.waiting.wait()
                kept = await store.run(store.pending)
                disk.on = False
                room.back.set()
            await box.send(ping(3))
            rest = [(await box.receive()).envelope.payload.n for _ in range(2)]
            left = await store.run(store.pending)
    assert str(db) in str(refused.value)
    assert "no space left" in str(refused.value)
    assert (2, 1, [2, 3], 2) == (kept, room.waits, rest, left)


async def test_sqlites_own_disk_full_is_a_disk_full_failure(tmp_path: Path) -> None:
    """A database that may not grow (SQLite's own SQLITE_FULL) refuses a send with
    DiskFullFailure, and takes it once it may grow again."""
    async with SqliteStore.open(tmp_path / "m.sqlite3") as store, box_in(store) as box:
        pages = await store.run(lambda: store._db.execute("PRAGMA page_count").fetchone()[0])
        await store.run(store._db.execute, f"PRAGMA max_page_count = {pages}")
        with pytest.raises(DiskFullFailure):
            await box.send(ping(1, "w" * 100_000))
        await store.run(store._db.execute, "PRAGMA max_page_count = 1073741823")
        await box.send(ping(2, "w" * 100_000))
        depth = box.depth()
    assert 1 == depth


# --- the counters behind the mark --------------------------------------------------------------


def _sequence_and_mark(db: Path) -> tuple[int, int]:
    """The envelopes' AUTOINCREMENT sequence ("stored") and the mark file's stored count."""
    with sqlite3.connect(db) as conn:
        (seq,) = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'envelopes'").fetchone()
    conn.close()
    return seq, int(db.with_suffix(".mark").read_text().split()[3])


async def test_a_duplicate_send_takes_no_number_so_the_mark_stays_exact(tmp_path: Path) -> None:
    """An envelope sent again (queued or already acked) is dropped without taking a sequence
    number: the database's "stored" counter and the mark agree, so a later loss of exactly
    the newest message would still be noticed."""
    db = tmp_path / "m.sqlite3"
    first, second = ping(1), ping(2)
    async with SqliteStore.open(db) as store, box_in(store) as box:
        await box.send(first)
        await box.send(first)  # queued already
        await box.ack(await box.receive())
        await box.send(first)  # acked already
        await box.send(second)
    assert (2, 2) == _sequence_and_mark(db)


_OLDER_SCHEMA = """
CREATE TABLE envelopes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, recipient TEXT NOT NULL,
    in_flight INTEGER NOT NULL DEFAULT 0, deliveries INTEGER NOT NULL DEFAULT 0,
    body TEXT NOT NULL);
CREATE INDEX envelopes_by_recipient ON envelopes (recipient, seq);
CREATE TABLE marks (one INTEGER PRIMARY KEY CHECK (one = 1), db_id TEXT NOT NULL,
    stored INTEGER NOT NULL, settled INTEGER NOT NULL);
INSERT INTO marks VALUES (1, '0123456789abcdef0123456789abcdef', 0, 0);
CREATE TRIGGER envelope_stored AFTER INSERT ON envelopes
    BEGIN UPDATE marks SET stored = stored + 1; END;
CREATE TRIGGER envelope_settled AFTER DELETE ON envelopes
    BEGIN UPDATE marks SET settled = settled + 1; END;
"""


async def test_a_database_of_the_earlier_schema_keeps_its_messages_and_identity(
    tmp_path: Path,
) -> None:
    """A database written with the per-message index and counter triggers opens without a
    loss reported against its mark, delivers what it holds, and loses the index and
    triggers (they cost every message a page write)."""
    db = tmp_path / "m.sqlite3"
    with sqlite3.connect(db) as conn:
        conn.executescript(_OLDER_SCHEMA)
        for n in (1, 2, 3):
            conn.execute(
                "INSERT INTO envelopes (id, recipient, body) VALUES (?, 'box', ?)",
                (ping(n).id, CODEC.encode(ping(n))),
            )
        conn.execute("DELETE FROM envelopes WHERE seq = 1")
    conn.close()
    mark = "baton-mailboxes 1 0123456789abcdef0123456789abcdef"
    db.with_suffix(".mark").write_text(f"{mark} {3:020d} {1:020d}\n")
    with capture_logs() as logs:
        async with SqliteStore.open(db) as store, box_in(store) as box:
            delivered = [(await box.receive()).envelope.payload.n for _ in range(2)]
            warnings = store.warnings
    with sqlite3.connect(db) as conn:
        left = sorted(row[0] for row in conn.execute("SELECT name FROM sqlite_master"))
    conn.close()
    assert ([2, 3], []) == (delivered, warnings)
    assert [] == [e for e in logs if e["event"] in ("mailbox.lost", "mailbox.rewound")]
    assert ["acked", "dead_letters", "envelopes", "marks", "sqlite_autoindex_acked_1"] == [
        name for name in left if not name.startswith(("sqlite_autoindex_env", "sqlite_seq"))
    ]
