"""The vector and hybrid memory backends: sqlite-vec embeddings in the memory database
(docs/memory.md, "vector" and "hybrid").

The vectors live in a `vec0` table of the same file as the entries and their FTS5 index,
keyed by the entry's rowid. The file records which embedder made them: opened with another
one (or another size), the vectors are made again from the entries, which hold every text.
Entries stored meanwhile by the plain sqlite backend are embedded at open too.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from baton._log import get_logger
from baton.memory._sqlite_db import MemoryDatabase, tag_filter
from baton.memory._text import query_terms
from baton.memory.errors import MissingExtraError
from baton.memory.models import MemoryEntry, MemoryHit
from baton.memory.protocol import Embedder

log = get_logger(__name__)

# Reciprocal rank fusion: a document's fused score is the sum of 1 / (RRF_K + rank) over the
# rankings it appears in; 60 is the constant of the method's paper and of most systems.
RRF_K = 60
# How deep each ranking is read before fusing, at least.
FUSION_DEPTH = 50
EMBED_BATCH = 256
FEATURE = "the vector memory backend"


def _sqlite_vec() -> Any:
    # Imported on use: the `vector` extra is optional.
    try:
        import sqlite_vec  # type: ignore[import-untyped,unused-ignore]  # noqa: PLC0415
    except ImportError as error:
        raise MissingExtraError(FEATURE, "sqlite-vec", "vector") from error
    return sqlite_vec


def _extension_sqlite() -> ModuleType:
    """A DB-API sqlite module that can load extensions: the standard one if its SQLite was
    built so, else sqlean.py's (the `vector` extra installs it)."""
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3
    try:
        import sqlean  # type: ignore[import-untyped,unused-ignore]  # noqa: PLC0415
    except ImportError as error:
        raise MissingExtraError(
            f"{FEATURE} (this Python's sqlite3 cannot load extensions)", "sqlean.py", "vector"
        ) from error
    module: ModuleType = sqlean
    return module


def _serialize(vector: Sequence[float]) -> bytes:
    return bytes(_sqlite_vec().serialize_float32(list(vector)))


def embedder_name(embedder: Embedder) -> str:
    """What identifies an embedder's vectors: its class and size."""
    kind = type(embedder)
    return f"{kind.__module__}.{kind.__qualname__}/{embedder.dimensions}"


class VectorMemoryBackend:
    """Entries in the memory database, found by the cosine distance of their embeddings."""

    def __init__(self, database: MemoryDatabase, embedder: Embedder) -> None:
        self._database = database
        self._embedder = embedder

    @classmethod
    async def open(cls, path: Path, embedder: Embedder) -> VectorMemoryBackend:
        """Open (creating) the database at `path` with the sqlite-vec extension loaded."""
        vec = _sqlite_vec()
        module = _extension_sqlite()

        def prepare(db: sqlite3.Connection) -> None:
            db.enable_load_extension(True)
            vec.load(db)
            db.enable_load_extension(False)

        database = await MemoryDatabase.open(path, module=module, prepare=prepare)
        backend = cls(database, embedder)
        try:
            await backend._sync_vectors()
        except BaseException:
            await database.run(database.close)
            raise
        return backend

    def _prepare_table(self) -> list[tuple[int, str]]:
        """Make the vector table fit this embedder; the entries that still need a vector."""
        db = self._database.db
        name = embedder_name(self._embedder)

        def work() -> list[tuple[int, str]]:
            db.execute("CREATE TABLE IF NOT EXISTS memory_meta (key TEXT PRIMARY KEY, value TEXT)")
            row = db.execute("SELECT value FROM memory_meta WHERE key = 'embedder'").fetchone()
            if row is not None and row[0] != name:
                log.warning(
                    "memory.vectors_rebuilt", path=str(self._database.path), was=row[0], now=name
                )
                db.execute("DROP TABLE IF EXISTS memory_vec")
            db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS memory_vec USING vec0("
                f"embedding float[{int(self._embedder.dimensions)}] distance_metric=cosine)"
            )
            db.execute(
                "INSERT INTO memory_meta (key, value) VALUES ('embedder', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (name,),
            )
            db.execute(
                "DELETE FROM memory_vec WHERE rowid NOT IN (SELECT rowid FROM memory_entries)"
            )
            missing = db.execute(
                "SELECT rowid, content FROM memory_entries "
                "WHERE rowid NOT IN (SELECT rowid FROM memory_vec) ORDER BY rowid"
            ).fetchall()
            return [(int(r[0]), str(r[1])) for r in missing]

        return self._database.write(work)

    async def _sync_vectors(self) -> None:
        missing = await self._database.run(self._prepare_table)
        for start in range(0, len(missing), EMBED_BATCH):
            batch = missing[start : start + EMBED_BATCH]
            vectors = await self._embedder.embed([text for _, text in batch])
            rows = [(rowid, _serialize(v)) for (rowid, _), v in zip(batch, vectors, strict=True)]
            await self._database.run(self._insert_vectors, rows)

    def _insert_vectors(self, rows: list[tuple[int, bytes]]) -> None:
        db = self._database.db

        def work() -> None:
            # An entry forgotten meanwhile gets no vector.
            for rowid, blob in rows:
                db.execute(
                    "INSERT INTO memory_vec (rowid, embedding) SELECT ?, ? "
                    "WHERE EXISTS (SELECT 1 FROM memory_entries WHERE rowid = ?)",
                    (rowid, blob, rowid),
                )

        self._database.write(work)

    async def store(self, entry: MemoryEntry) -> None:
        """Embed the entry, then insert it and its vector in one transaction."""
        [vector] = await self._embedder.embed([entry.content])
        blob = _serialize(vector)
        database = self._database

        def work() -> None:
            rowid = database.insert(entry)
            database.db.execute(
                "INSERT INTO memory_vec (rowid, embedding) VALUES (?, ?)", (rowid, blob)
            )

        await database.run(database.write, work)

    async def store_many(self, entries: Sequence[MemoryEntry]) -> None:
        """Embed many entries in one call and insert them in one transaction (an import;
        not part of the protocol)."""
        vectors = await self._embedder.embed([entry.content for entry in entries])
        blobs = [_serialize(vector) for vector in vectors]
        database = self._database

        def work() -> None:
            for entry, blob in zip(entries, blobs, strict=True):
                rowid = database.insert(entry)
                database.db.execute(
                    "INSERT INTO memory_vec (rowid, embedding) VALUES (?, ?)", (rowid, blob)
                )

        await database.run(database.write, work)

    def _nearest(self, blob: bytes, tags: Sequence[str], depth: int) -> list[tuple[int, float]]:
        """(rowid, cosine distance) of the `depth` nearest entries having all `tags`."""
        db = self._database.db
        if not tags:
            rows = db.execute(
                "SELECT rowid, distance FROM memory_vec WHERE embedding MATCH ? AND k = ? "
                "ORDER BY distance",
                (blob, min(depth, 4096)),
            ).fetchall()
        else:
            # A k-nearest query cannot filter by tag; the tagged entries are few enough to
            # measure one by one.
            condition, params = tag_filter(tags)
            rows = db.execute(
                "SELECT e.rowid, vec_distance_cosine(v.embedding, ?) AS distance "  # noqa: S608
                "FROM memory_vec v JOIN memory_entries e ON e.rowid = v.rowid "
                f"WHERE {condition} ORDER BY distance LIMIT ?",
                [blob, *params, depth],
            ).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    async def _query_blob(self, query: str) -> bytes | None:
        if not query_terms(query):
            return None
        [vector] = await self._embedder.embed([query])
        return _serialize(vector)

    async def search(
        self, query: str, *, tags: Sequence[str] = (), limit: int = 5
    ) -> list[MemoryHit]:
        """The entries nearest to the query's embedding; score = cosine similarity."""
        blob = await self._query_blob(query)
        if blob is None:
            return []
        database = self._database

        def work() -> list[MemoryHit]:
            nearest = self._nearest(blob, tuple(tags), limit)
            entries = database.by_rowids([rowid for rowid, _ in nearest])
            return [
                MemoryHit(entry=entries[rowid], score=1.0 - distance)
                for rowid, distance in nearest
                if rowid in entries
            ]

        return await database.run(work)

    async def delete(self, entry_id: str) -> bool:
        """Delete the entry and its vector; False if none has that id."""
        database = self._database

        def work() -> bool:
            rowid = database.remove(entry_id)
            if rowid is None:
                return False
            database.db.execute("DELETE FROM memory_vec WHERE rowid = ?", (rowid,))
            return True

        return await database.run(database.write, work)

    async def list_all(self, *, tags: Sequence[str] = ()) -> list[MemoryEntry]:
        """Every entry having all of `tags`, oldest first."""
        database = self._database
        return await database.run(database.entries, tuple(tags))

    async def close(self) -> None:
        """Close the database connection."""
        database = self._database
        await database.run(database.close)


class HybridMemoryBackend(VectorMemoryBackend):
    """BM25 (FTS5) and vector rankings fused by reciprocal rank fusion (k = 60)."""

    @classmethod
    async def open(cls, path: Path, embedder: Embedder) -> HybridMemoryBackend:
        """Open (creating) the database at `path` with the sqlite-vec extension loaded."""
        backend = await super().open(path, embedder)
        assert isinstance(backend, HybridMemoryBackend)
        return backend

    async def search(
        self, query: str, *, tags: Sequence[str] = (), limit: int = 5
    ) -> list[MemoryHit]:
        """Entries ranked by the fused score of their BM25 and vector ranks, best first."""
        blob = await self._query_blob(query)
        if blob is None:
            return []
        database = self._database
        depth = max(FUSION_DEPTH, 4 * limit)

        def work() -> list[MemoryHit]:
            lexical = database.fts_search(query, tuple(tags), depth)
            nearest = self._nearest(blob, tuple(tags), depth)
            fused: dict[int, float] = {}
            for ranking in ([rowid for rowid, _, _ in lexical], [r for r, _ in nearest]):
                for rank, rowid in enumerate(ranking, start=1):
                    fused[rowid] = fused.get(rowid, 0.0) + 1.0 / (RRF_K + rank)
            best = sorted(fused, key=lambda rowid: (-fused[rowid], -rowid))[:limit]
            entries = {rowid: entry for rowid, _, entry in lexical}
            entries.update(database.by_rowids([r for r in best if r not in entries]))
            return [
                MemoryHit(entry=entries[rowid], score=fused[rowid])
                for rowid in best
                if rowid in entries
            ]

        return await database.run(work)
