"""How the sqlite mailbox database reports trouble instead of crashing or losing quietly.

README.md, "After a full disk or a damaged file", is the user's side of it:

- A write refused for space (SQLITE_FULL) becomes a `DiskFullFailure` naming the file.
- A write past the process's file-size limit (`ulimit -f`) becomes a `FileTooLargeFailure`
  naming the file that may not grow: SQLite reports that EFBIG as a plain I/O error
  (SQLITE_IOERR_WRITE) and Python shows no errno, so it is told apart by the files' sizes.
- A damaged database (not a database, malformed, a directory, unreadable) becomes one
  `StateFileError` naming the file and what to do with it.
- The mark file (`.baton/mailboxes.mark`) holds the database's own counters of messages
  ever stored and ever settled (acked or dead-lettered), rewritten after each change. At
  open, a database that is another one than the mark's, or that has fewer messages than the
  mark says (it was deleted, emptied or damaged, or its `-wal` was lost after a kill), is
  reported: how many queued messages it no longer holds. The mark is written after the
  database commits, so a kill between the two leaves it behind the database, never ahead:
  it can miss nothing a later start would call lost.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from baton._log import get_logger
from baton._private import private_opener
from baton.errors import DiskFullFailure, FileTooLargeFailure, StateFileError, file_size_limit

log = get_logger(__name__)

MARK_SUFFIX = ".mark"
_MARK = re.compile(r"^baton-mailboxes 1 ([0-9a-f]{32}) (\d{20}) (\d{20})\n")
_DAMAGED = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
# The most one write of SQLite's adds to a file: the largest page, and a WAL frame's header.
_LARGEST_WRITE = 65_536 + 24


def _code(error: sqlite3.Error) -> int | None:
    code = getattr(error, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF  # the primary code of an extended one


def is_full(error: BaseException) -> bool:
    """Whether SQLite refused a write for lack of space."""
    if not isinstance(error, sqlite3.Error):
        return False
    code = _code(error)
    if code is not None:
        return code == sqlite3.SQLITE_FULL
    return "database or disk is full" in str(error)


def past_size_limit(path: Path, error: sqlite3.Error) -> FileTooLargeFailure | None:
    """The `FileTooLargeFailure` a failed write is when the process has a file-size limit and
    one of the database's files is within one write of it; None otherwise. The filesystem's
    own largest file (no limit set) cannot be told from other I/O errors this way."""
    if _code(error) not in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL):
        return None
    limit = file_size_limit()
    if limit is None:
        return None
    # Stats on the loop, but only on this failure's path and with a limit set: three files.
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-journal")):
        try:
            size = candidate.stat().st_size
        except OSError:
            continue
        if size + _LARGEST_WRITE > limit:
            return FileTooLargeFailure(candidate, str(error))
    return None


def move_aside(path: Path) -> str:
    """The command that moves a damaged database and its companions out of the way."""
    return f"mv {path} {path}.damaged && rm -f {path}-wal {path}-shm"


def damaged(path: Path, problem: str) -> StateFileError:
    """The one-line error for a mailbox database that cannot be used as it is."""
    return StateFileError(
        path,
        problem,
        f"move it aside ({move_aside(path)}) and start again: baton then begins with an empty "
        "mailbox database and reports how many queued messages it lost",
    )


def translate(path: Path, error: sqlite3.Error) -> Exception:
    """The baton error that says what a failed statement means, or `error` itself."""
    too_large = past_size_limit(path, error)
    if too_large is not None:
        return too_large
    if is_full(error):
        return DiskFullFailure(path, str(error))
    code = _code(error)
    if code in _DAMAGED:
        return damaged(path, f"is damaged ({error})")
    if code in (sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY):
        return StateFileError(
            path,
            f"cannot be opened or written ({error})",
            f"check that it and {path.parent} are writable files and directories of yours",
        )
    return error


@dataclass(frozen=True, slots=True)
class Counts:
    """A database's identity and its counters of messages ever stored and ever settled."""

    db_id: str
    stored: int
    settled: int

    @property
    def unsettled(self) -> int:
        return self.stored - self.settled


def mark_line(db_id: str, stored: int, settled: int) -> bytes:
    """The mark file's one line for these counters (fixed width: rewritten in place)."""
    return b"baton-mailboxes 1 %s %020d %020d\n" % (db_id.encode(), stored, settled)


@dataclass(frozen=True, slots=True)
class Loss:
    """What a database lacks against its mark file."""

    missing: int  # queued messages (at least) the database no longer holds
    forgotten: int  # messages stored, handled or not, of which it has no trace
    replaced: bool  # another database than the mark's (deleted, emptied, moved aside)

    def describe(self, database: Path) -> str:
        if self.replaced:
            what = (
                f"is not the one that held the queued messages (it was deleted, emptied or "
                f"moved aside, or lost its -wal): {self.missing} queued message(s) are lost"
            )
        else:
            what = (
                "went back to an older state (its -wal was deleted, emptied or damaged): at "
                f"least {self.missing} queued message(s) are lost ({self.forgotten} stored "
                "since are gone)"
            )
        return (
            f"the mailbox database {database} {what}; they will not be delivered — send "
            "them again (`baton status` shows where each scenario stands)"
        )


def compare(mark: Counts | None, database: Counts) -> Loss | None:
    """What `database` lost against the `mark` an earlier process left, or None."""
    if mark is None:
        return None
    if mark.db_id != database.db_id:
        # Nothing of the old database is here: whatever it still held is gone.
        if mark.unsettled <= 0:
            return None
        return Loss(missing=mark.unsettled, forgotten=mark.stored, replaced=True)
    forgotten = mark.stored - database.stored
    if forgotten <= 0 and mark.settled <= database.settled:
        return None
    # Of the messages it forgot, those it also forgot settling may have been handled
    # already; the others were queued. So at least this many queued messages are gone:
    missing = max(0, mark.unsettled - database.unsettled)
    return Loss(missing=missing, forgotten=max(0, forgotten), replaced=False)


class MarkFile:
    """`<database>.mark` without its suffix: one fixed-width line rewritten in place."""

    def __init__(self, database: Path) -> None:
        self.path = database.with_suffix(MARK_SUFFIX)
        self._fd: int | None = None
        self._failed = False

    def read(self) -> Counts | None:
        """What the mark says, or None when there is none (or it cannot be read: said)."""
        if self.path.exists() and not self.path.is_file():
            # Reading a FIFO would wait for a writer for ever.
            log.warning("mailbox.mark_unreadable", path=str(self.path), error="not a file")
            return None
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("mailbox.mark_unreadable", path=str(self.path), error=str(exc))
            return None
        found = _MARK.match(data.decode("ascii", errors="replace"))
        if found is None:
            log.warning(
                "mailbox.mark_unreadable",
                path=str(self.path),
                error="not a mark line; lost messages cannot be counted this time",
            )
            return None
        return Counts(found[1], int(found[2]), int(found[3]))

    def open(self) -> None:
        try:
            if self.path.exists() and not self.path.is_file():
                raise IsADirectoryError(f"{self.path} is not a regular file")
            self._fd = private_opener(self.path, os.O_RDWR | os.O_CREAT)
        except OSError as exc:
            self._give_up(exc)

    def write(self, db_id: str, stored: int, settled: int) -> None:
        """Record the counters of database `db_id`; a failure is said once, and the mark
        stays behind (which is safe)."""
        if self._fd is None:
            return
        try:
            os.pwrite(self._fd, mark_line(db_id, stored, settled), 0)
        except OSError as exc:
            self._give_up(exc)

    def _give_up(self, error: OSError) -> None:
        if not self._failed:
            self._failed = True
            log.warning(
                "mailbox.mark_unwritten",
                path=str(self.path),
                error=str(error),
                effect="lost messages may go unnoticed until it can be written",
            )

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
