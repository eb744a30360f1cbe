"""The JSONL memory backend: one line per entry in an append-only file, ranked by BM25
(docs/memory.md, "jsonl").

A stored entry is the line `{"entry": {...}}`; forgetting one appends `{"deleted": "<id>"}`.
The file is only ever appended to, so several processes may share it: each reads the lines
the others appended before every search. A last line without its newline was torn by a crash
while it was written: it is cut off at open (with a warning), as it never was stored. A
damaged line anywhere else stops the open with an error naming the file and line.
"""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import pydantic

from baton._log import get_logger
from baton._private import private_dir, private_opener
from baton.memory._bm25 import Bm25Index
from baton.memory._text import query_terms, words
from baton.memory.errors import MemoryFileError
from baton.memory.models import MemoryEntry, MemoryHit

log = get_logger(__name__)

T = TypeVar("T")


class JsonlMemoryBackend:
    """Entries in a JSONL file, held in memory with a BM25 index over their words."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: dict[str, MemoryEntry] = {}
        self._index = Bm25Index()
        self._offset = 0
        self._line = 0
        self._lock = anyio.Lock()

    @classmethod
    async def open(cls, path: Path) -> JsonlMemoryBackend:
        """Open (creating) the JSONL file at `path` and read it."""
        backend = cls(path)
        await anyio.to_thread.run_sync(backend._open_sync)
        return backend

    def _open_sync(self) -> None:
        private_dir(self.path.parent)
        with open(self.path, "ab", opener=private_opener) as file:
            size = file.tell()
        if size:
            with open(self.path, "rb") as file:
                file.seek(max(0, size - 1))
                torn = file.read(1) != b"\n"
            if torn:
                self._cut_torn_line(size)
        self._refresh()

    def _cut_torn_line(self, size: int) -> None:
        data = self.path.read_bytes()
        keep = data.rfind(b"\n") + 1
        log.warning("memory.torn_line_dropped", path=str(self.path), dropped_bytes=size - keep)
        with open(self.path, "r+b") as file:
            file.truncate(keep)

    def _refresh(self) -> None:
        """Apply the complete lines appended since the last read (by any process)."""
        with open(self.path, "rb") as file:
            file.seek(self._offset)
            data = file.read()
        end = data.rfind(b"\n") + 1
        for raw in data[:end].splitlines():
            self._line += 1
            self._apply(raw)
        self._offset += end

    def _apply(self, raw: bytes) -> None:
        try:
            record = json.loads(raw)
            if "deleted" in record:
                entry_id = str(record["deleted"])
                self._entries.pop(entry_id, None)
                self._index.remove(entry_id)
                return
            entry = MemoryEntry.model_validate(record["entry"])
        except (ValueError, KeyError, TypeError, pydantic.ValidationError) as error:
            raise MemoryFileError(
                self.path,
                f"line {self._line} is not a memory entry ({type(error).__name__}: {error})",
                "fix or delete that line",
            ) from error
        self._entries[entry.id] = entry
        self._index.add(entry.id, words(entry.content))

    def _append(self, *records: dict[str, object]) -> None:
        lines = "".join(
            json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
            for record in records
        )
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, lines.encode())
        finally:
            os.close(fd)
        self._refresh()

    async def _run(self, work: Callable[..., T], *args: Any) -> T:
        async with self._lock:
            return await anyio.to_thread.run_sync(work, *args)

    async def store(self, entry: MemoryEntry) -> None:
        """Append the entry's line."""
        record = {"entry": entry.model_dump(mode="json")}
        await self._run(self._append, record)

    async def store_many(self, entries: Sequence[MemoryEntry]) -> None:
        """Append many entries' lines in one write (an import; not part of the protocol)."""
        records = [{"entry": entry.model_dump(mode="json")} for entry in entries]
        await self._run(self._append, *records)

    def _search_sync(self, query: str, tags: Sequence[str], limit: int) -> list[MemoryHit]:
        self._refresh()
        terms = query_terms(query)
        among = None
        if tags:
            wanted = set(tags)
            among = {key for key, e in self._entries.items() if wanted.issubset(e.tags)}
        scores = self._index.scores(terms, among, limit)
        entries = self._entries
        best = heapq.nsmallest(
            limit, scores, key=lambda key: (-scores[key], -entries[key].created_at.timestamp())
        )
        return [MemoryHit(entry=self._entries[key], score=scores[key]) for key in best]

    async def search(
        self, query: str, *, tags: Sequence[str] = (), limit: int = 5
    ) -> list[MemoryHit]:
        """The entries sharing words with `query`, by BM25, best first (newer on a tie)."""
        return await self._run(self._search_sync, query, tuple(tags), limit)

    def _delete_sync(self, entry_id: str) -> bool:
        self._refresh()
        if entry_id not in self._entries:
            return False
        self._append({"deleted": entry_id})
        return True

    async def delete(self, entry_id: str) -> bool:
        """Append a deletion line for the entry; False if none has that id."""
        return await self._run(self._delete_sync, entry_id)

    def _list_sync(self, tags: Sequence[str]) -> list[MemoryEntry]:
        self._refresh()
        wanted = set(tags)
        return [e for e in self._entries.values() if wanted.issubset(e.tags)]

    async def list_all(self, *, tags: Sequence[str] = ()) -> list[MemoryEntry]:
        """Every entry having all of `tags`, in file order (oldest first)."""
        return await self._run(self._list_sync, tuple(tags))

    async def close(self) -> None:
        """Nothing stays open between calls; drop the in-memory copy."""
        self._entries.clear()
        self._index = Bm25Index()
