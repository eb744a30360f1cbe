"""Opening the mailbox database: its schema, checks that say what is wrong in one line, and
the counters the mark file is compared with (`_sqlite_health`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from baton._private import private_dir, private_file
from baton.errors import DiskFullFailure, StateFileError
from baton.mailboxes._group_commit import BUSY_TIMEOUT_MS
from baton.mailboxes._sqlite_checkpoint import WAL_SIZE_LIMIT
from baton.mailboxes._sqlite_health import Counts, damaged, translate
from baton.mailboxes.dead_letter_body import excerpt

# Every statement here is paid on each message, so the tables carry nothing a message does
# not need: no index beyond the keys (a mailbox's rows are read by recipient only at start,
# when a scan of what is queued is cheap), and no counter rows: the counters the mark file
# compares (`_sqlite_health`) are derived, "stored" from the envelopes' AUTOINCREMENT
# sequence (rolled back with the transaction that would have stored), "settled" from it and
# the rows left. Databases made before keep their old index, triggers and counter columns
# until they are dropped here.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS envelopes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    recipient TEXT NOT NULL,
    in_flight INTEGER NOT NULL DEFAULT 0,
    deliveries INTEGER NOT NULL DEFAULT 0,
    body TEXT NOT NULL
);
DROP INDEX IF EXISTS envelopes_by_recipient;
CREATE TABLE IF NOT EXISTS acked (
    n INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS dead_letters (
    n INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    recipient TEXT NOT NULL,
    reason TEXT NOT NULL,
    body TEXT NOT NULL,
    at REAL NOT NULL,
    size INTEGER,
    sha256 TEXT
);
CREATE TABLE IF NOT EXISTS marks (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    db_id TEXT NOT NULL,
    stored INTEGER NOT NULL DEFAULT 0,
    settled INTEGER NOT NULL DEFAULT 0
);
INSERT OR IGNORE INTO marks (one, db_id) VALUES (1, lower(hex(randomblob(16))));
DROP TRIGGER IF EXISTS envelope_stored;
DROP TRIGGER IF EXISTS envelope_settled;
"""
_COUNTS = """
SELECT (SELECT db_id FROM marks),
       COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'envelopes'), 0),
       (SELECT COUNT(*) FROM envelopes)
"""


def open_checked(path: Path) -> tuple[sqlite3.Connection, Counts]:
    """The database at `path` (created if absent, private), checked, and its counters; a
    one-line baton error when it cannot be used. Blocking: run it on a worker thread.

    The connection is set for the event loop (`_group_commit`): a locked database raises at
    once instead of waiting there (the batch waits on a worker thread), and there is no
    automatic checkpoint (they fsync: `_sqlite_checkpoint` runs them on a thread)."""

    def connect() -> sqlite3.Connection:
        # Private (README, "Sandbox and file modes"): SQLite creates -wal and -shm with the
        # database's mode, so a 0600 database keeps them 0600 too.
        private_file(private_dir(path.parent) / path.name)
        # Autocommit mode: the group commit opens and ends each transaction itself.
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")  # opening may wait, off the loop
        db.executescript(_SCHEMA)
        return db

    db, counts = _checked_open(path, connect)
    db.execute("PRAGMA busy_timeout=0")
    db.execute("PRAGMA wal_autocheckpoint=0")
    # The checkpointer starts a restarted -wal with a commit of its own, which cuts the file
    # to this limit; when it could not, this connection's next commit does (`_sqlite_checkpoint`).
    db.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
    return db, counts


def _excerpt_old_dead_letters(db: sqlite3.Connection) -> None:
    """Bring a database from before the excerpts up to date: the columns, and bodies cut."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(dead_letters)")}
    if "size" not in columns:
        db.execute("ALTER TABLE dead_letters ADD COLUMN size INTEGER")
        db.execute("ALTER TABLE dead_letters ADD COLUMN sha256 TEXT")
    for n, body in db.execute("SELECT n, body FROM dead_letters WHERE size IS NULL").fetchall():
        cut = excerpt(body)
        db.execute(
            "UPDATE dead_letters SET body = ?, size = ?, sha256 = ? WHERE n = ?",
            (cut.text, cut.size, cut.sha256, n),
        )


def _checked_open(
    path: Path, connect: Callable[[], sqlite3.Connection]
) -> tuple[sqlite3.Connection, Counts]:
    """`connect()`, checked: a one-line baton error when the database cannot be used."""
    if path.is_dir():
        raise damaged(path, "is a directory, not the mailbox database")
    if path.exists() and not path.is_file():
        raise damaged(path, "is not a regular file (a FIFO, a device, a socket?)")
    for companion in (Path(f"{path}-wal"), Path(f"{path}-shm")):
        if companion.exists() and not companion.is_file():
            raise StateFileError(
                companion,
                "is a directory or another special file, not SQLite's file",
                "move it aside, then start again",
            )
    try:
        db = connect()
    except sqlite3.Error as exc:
        raise _opening(path, exc) from None
    try:
        # A damaged page is found now, with one line naming the file, rather than by the
        # statement that happens to read it while an actor is being supervised.
        problems = [row[0] for row in db.execute("PRAGMA quick_check(3)")]
        if problems != ["ok"]:
            raise damaged(path, f"is damaged ({'; '.join(problems)})")
        _excerpt_old_dead_letters(db)
        db_id, stored, queued = db.execute(_COUNTS).fetchone()
    except BaseException as exc:
        db.close()
        if isinstance(exc, sqlite3.Error):
            raise _opening(path, exc) from None
        raise
    return db, Counts(str(db_id), int(stored), int(stored) - int(queued))


def _opening(path: Path, error: sqlite3.Error) -> Exception:
    found = translate(path, error)
    if isinstance(found, DiskFullFailure):
        # Nothing runs yet that could resume by itself: starting needs the room first.
        return StateFileError(
            path, f"cannot be written: {error}", "free disk space (or quota), then start again"
        )
    if found is error:
        return damaged(path, f"cannot be opened as a database ({error})")
    return found
