"""The memory database: entries, their tags and an FTS5 index in one SQLite file.

The sqlite, vector and hybrid backends share this file and its tables (docs/memory.md,
"Files"). The FTS5 index is an external-content index over `memory_entries`, so the entries
table is the truth: a damaged index is rebuilt from it and nothing is lost. WAL and a busy
timeout let several processes of one machine use the file at once; every write is one
`BEGIN IMMEDIATE` transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from baton._log import get_logger
from baton._private import private_dir, private_file
from baton.memory._fts_search import FtsPlanner, quoted
from baton.memory._text import query_terms
from baton.memory.errors import MemoryFileError
from baton.memory.models import MemoryEntry, MemorySource

log = get_logger(__name__)

T = TypeVar("T")

BUSY_TIMEOUT_MS = 10_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memory_entries (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    content TEXT NOT NULL,
    tags TEXT NOT NULL,
    created_at TEXT NOT NULL,
    source TEXT NOT NULL,
    metadata TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS memory_tags (
    tag TEXT NOT NULL,
    entry INTEGER NOT NULL,
    PRIMARY KEY (tag, entry)
) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(
    content, content='memory_entries', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS memory_entries_ai AFTER INSERT ON memory_entries BEGIN
    INSERT INTO memory_fts(rowid, content) VALUES (new.rowid, new.content);
END;
CREATE TRIGGER IF NOT EXISTS memory_entries_ad AFTER DELETE ON memory_entries BEGIN
    INSERT INTO memory_fts(memory_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
    DELETE FROM memory_tags WHERE entry = old.rowid;
END;
"""

_COLUMNS = "e.rowid, e.id, e.content, e.tags, e.created_at, e.source, e.metadata"


def tag_filter(tags: Sequence[str], column: str = "e.rowid") -> tuple[str, list[Any]]:
    """A SQL condition on `column` (an entry's rowid) keeping entries that have every tag,
    and its parameters."""
    if not tags:
        return "1", []
    marks = ", ".join("?" for _ in tags)
    # Only placeholders are formatted in; the tags go as parameters.
    return (
        f"{column} IN (SELECT entry FROM memory_tags WHERE tag IN ({marks}) "  # noqa: S608
        "GROUP BY entry HAVING count(*) = ?)",
        [*tags, len(tags)],
    )


def row_entry(row: Sequence[Any]) -> MemoryEntry:
    """The entry of a row selected with `_COLUMNS` (its first column, the rowid, skipped)."""
    return MemoryEntry(
        id=row[1],
        content=row[2],
        tags=tuple(json.loads(row[3])),
        created_at=datetime.fromisoformat(row[4]),
        source=MemorySource.model_validate_json(row[5]),
        metadata=json.loads(row[6]),
    )


class MemoryDatabase:
    """One connection to the memory file, used from worker threads one call at a time."""

    def __init__(self, path: Path, db: sqlite3.Connection, module: ModuleType) -> None:
        self.path = path
        self.db = db
        self.module = module
        self._lock = anyio.Lock()
        self._planner = FtsPlanner(db)

    @classmethod
    async def open(
        cls,
        path: Path,
        *,
        module: ModuleType = sqlite3,
        prepare: Callable[[sqlite3.Connection], None] | None = None,
    ) -> MemoryDatabase:
        """Open (creating) the file at `path`, check its FTS index and rebuild a damaged one.

        `module` is the DB-API module to connect with (one able to load extensions for the
        vector backend); `prepare` runs on the new connection before the schema is made."""
        return await anyio.to_thread.run_sync(cls._open_sync, path, module, prepare)

    @classmethod
    def _open_sync(
        cls,
        path: Path,
        module: ModuleType,
        prepare: Callable[[sqlite3.Connection], None] | None,
    ) -> MemoryDatabase:
        private_dir(path.parent)
        private_file(path)
        db: sqlite3.Connection = module.connect(
            str(path), isolation_level=None, check_same_thread=False
        )
        try:
            db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            if prepare is not None:
                prepare(db)
            db.executescript(_SCHEMA)
            for suffix in ("-wal", "-shm"):
                sidecar = path.with_name(path.name + suffix)
                if sidecar.exists():
                    private_file(sidecar)
            database = cls(path, db, module)
            database._check_index()
        except module.DatabaseError as error:
            db.close()
            raise MemoryFileError(
                path,
                f"is not a readable memory database ({error})",
                "move it aside to start an empty memory, or restore it from a backup",
            ) from error
        except BaseException:
            db.close()
            raise
        return database

    def _check_index(self) -> None:
        try:
            self.db.execute(
                "INSERT INTO memory_fts(memory_fts, rank) VALUES ('integrity-check', 1)"
            )
        except self.module.DatabaseError as error:
            self.rebuild_index(str(error))

    def rebuild_index(self, reason: str) -> None:
        """Rebuild the FTS index from the entries table (it holds every entry's text)."""
        log.warning("memory.index_rebuilt", path=str(self.path), reason=reason)
        self.db.execute("INSERT INTO memory_fts(memory_fts) VALUES ('rebuild')")
        self._planner.forget_counts()

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        """Run `work(*args)` on a worker thread, one call at a time on this connection."""
        async with self._lock:
            return await anyio.to_thread.run_sync(work, *args)

    def write(self, work: Callable[[], T]) -> T:
        """Run `work` in one immediate transaction (it waits for other writers up to the
        busy timeout rather than failing at commit)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            result = work()
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")
        return result

    # --- the operations every SQLite backend shares (called on worker threads) ---------

    def insert(self, entry: MemoryEntry) -> int:
        """Insert `entry` and its tags; return its rowid. Call inside `write`."""
        cursor = self.db.execute(
            "INSERT INTO memory_entries (id, content, tags, created_at, source, metadata) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                entry.id,
                entry.content,
                json.dumps(list(entry.tags), ensure_ascii=False),
                entry.created_at.isoformat(),
                entry.source.model_dump_json(),
                json.dumps(entry.metadata, ensure_ascii=False),
            ),
        )
        rowid = cursor.lastrowid
        assert rowid is not None
        self.db.executemany(
            "INSERT INTO memory_tags (tag, entry) VALUES (?, ?)", [(t, rowid) for t in entry.tags]
        )
        return rowid

    def remove(self, entry_id: str) -> int | None:
        """Delete the entry (its tags and index rows go with it); its rowid, or None."""
        row = self.db.execute(
            "DELETE FROM memory_entries WHERE id = ? RETURNING rowid", (entry_id,)
        ).fetchone()
        return None if row is None else int(row[0])

    def entries(self, tags: Sequence[str]) -> list[MemoryEntry]:
        """Every entry having all of `tags`, oldest first."""
        condition, params = tag_filter(tags)
        rows = self.db.execute(
            f"SELECT {_COLUMNS} FROM memory_entries e WHERE {condition} "  # noqa: S608
            "ORDER BY e.created_at, e.rowid",
            params,
        ).fetchall()
        return [row_entry(row) for row in rows]

    def by_rowids(self, rowids: Sequence[int]) -> dict[int, MemoryEntry]:
        """The entries of these rowids that still exist."""
        if not rowids:
            return {}
        marks = ", ".join("?" for _ in rowids)
        rows = self.db.execute(
            f"SELECT {_COLUMNS} FROM memory_entries e WHERE e.rowid IN ({marks})",  # noqa: S608
            list(rowids),
        ).fetchall()
        return {int(row[0]): row_entry(row) for row in rows}

    def fts_search(
        self, query: str, tags: Sequence[str], limit: int
    ) -> list[tuple[int, float, MemoryEntry]]:
        """BM25-ranked entries matching words of `query`: (rowid, score, entry), best first;
        the score is FTS5's bm25() negated, so higher is better (baton/memory/_fts_search.py
        says which words are matched)."""
        terms = query_terms(query)
        if not terms:
            return []
        try:
            return self._fts_search(terms, tags, limit)
        except self.module.DatabaseError as error:
            if "fts5" not in str(error) and "malformed" not in str(error):
                raise
            self.rebuild_index(str(error))
            return self._fts_search(terms, tags, limit)

    def _fts_search(
        self, terms: list[str], tags: Sequence[str], limit: int
    ) -> list[tuple[int, float, MemoryEntry]]:
        plan = self._planner.plan(terms)
        if plan is None:
            return []
        match, ranked = plan
        rows = self._matching(match, tags, limit, ranked=ranked)
        if not ranked and len(rows) < limit:
            # Fewer entries hold every common word than asked for: add the newest holding
            # any of them.
            seen = {row[0] for row in rows}
            wider = " OR ".join(quoted(term) for term in terms)
            extra = self._matching(wider, tags, limit + len(rows), ranked=False)
            rows += [row for row in extra if row[0] not in seen][: limit - len(rows)]
            rows.sort(key=lambda row: (-float(row[7]), -int(row[0])))
        return [(int(row[0]), float(row[7]), row_entry(row)) for row in rows]

    def _matching(self, match: str, tags: Sequence[str], limit: int, *, ranked: bool) -> list[Any]:
        condition, params = tag_filter(tags, "memory_fts.rowid")
        order = "bm25(memory_fts), memory_fts.rowid DESC" if ranked else "memory_fts.rowid DESC"
        sql = (
            f"SELECT {_COLUMNS}, m.score FROM ("  # noqa: S608
            "SELECT memory_fts.rowid AS rowid, -bm25(memory_fts) AS score FROM memory_fts "
            f"WHERE memory_fts MATCH ? AND {condition} ORDER BY {order} LIMIT ?"
            ") m JOIN memory_entries e ON e.rowid = m.rowid ORDER BY m.score DESC, e.rowid DESC"
        )
        return list(self.db.execute(sql, [match, *params, limit]).fetchall())

    def close(self) -> None:
        """Close the connection."""
        self.db.close()
