"""The default memory backend: SQLite with an FTS5 index ranked by bm25()
(docs/memory.md, "sqlite")."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from baton.memory._sqlite_db import MemoryDatabase
from baton.memory.models import MemoryEntry, MemoryHit


class SqliteMemoryBackend:
    """Entries in a SQLite table, found through its FTS5 index."""

    def __init__(self, database: MemoryDatabase) -> None:
        self._database = database

    @classmethod
    async def open(cls, path: Path) -> SqliteMemoryBackend:
        """Open (creating) the memory database at `path`."""
        return cls(await MemoryDatabase.open(path))

    async def store(self, entry: MemoryEntry) -> None:
        """Insert the entry; the FTS index follows by trigger in the same transaction."""
        db = self._database
        await db.run(db.write, lambda: db.insert(entry))

    async def store_many(self, entries: Sequence[MemoryEntry]) -> None:
        """Insert many entries in one transaction (an import; not part of the protocol)."""
        db = self._database
        await db.run(db.write, lambda: [db.insert(entry) for entry in entries])

    async def search(
        self, query: str, *, tags: Sequence[str] = (), limit: int = 5
    ) -> list[MemoryHit]:
        """The entries sharing words with `query`, by BM25, best first."""
        db = self._database
        found = await db.run(db.fts_search, query, tuple(tags), limit)
        return [MemoryHit(entry=entry, score=score) for _, score, entry in found]

    async def delete(self, entry_id: str) -> bool:
        """Delete the entry; False if none has that id."""
        db = self._database
        return await db.run(db.write, lambda: db.remove(entry_id)) is not None

    async def list_all(self, *, tags: Sequence[str] = ()) -> list[MemoryEntry]:
        """Every entry having all of `tags`, oldest first."""
        db = self._database
        return await db.run(db.entries, tuple(tags))

    async def close(self) -> None:
        """Close the database connection."""
        db = self._database
        await db.run(db.close)
