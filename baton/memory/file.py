"""The file memory backend: one Markdown file per entry, found by substring match
(docs/memory.md, "file").

Each entry is `<folder>/<id>.md`: a JSON front matter block between `---` lines (id, tags,
time, source, metadata), then the entry's text as written, so a person can read, grep and
edit the folder. A file is written whole (temporary file, fsync, rename) and forgetting
deletes it, so several processes may share the folder; each read lists the folder again and
loads only the files it has not seen. The score of an entry is how many of the query's words
occur in its text (as substrings, ignoring case).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import pydantic

from baton._private import private_dir, private_opener
from baton.memory._text import query_terms
from baton.memory.errors import MemoryFileError
from baton.memory.models import MemoryEntry, MemoryHit

T = TypeVar("T")

FENCE = "---"
SUFFIX = ".md"


def render_file(entry: MemoryEntry) -> str:
    """The Markdown text of an entry's file."""
    header = entry.model_dump(mode="json", exclude={"content"})
    return f"{FENCE}\n{json.dumps(header, ensure_ascii=False)}\n{FENCE}\n{entry.content}"


def parse_file(path: Path, text: str) -> MemoryEntry:
    """The entry a file written by `render_file` holds; MemoryFileError if it is damaged."""
    head, sep, content = text.partition(f"\n{FENCE}\n")
    try:
        if not sep or not head.startswith(f"{FENCE}\n"):
            raise ValueError("no front matter between '---' lines")
        header = json.loads(head[len(FENCE) + 1 :])
        return MemoryEntry.model_validate({**header, "content": content})
    except (ValueError, TypeError, pydantic.ValidationError) as error:
        raise MemoryFileError(
            path,
            f"is not a memory entry file ({type(error).__name__}: {error})",
            "fix its front matter or delete the file",
        ) from error


class FileMemoryBackend:
    """Entries as Markdown files in one folder, cached in memory between reads."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._cache: dict[str, tuple[MemoryEntry, str]] = {}
        self._lock = anyio.Lock()

    @classmethod
    async def open(cls, folder: Path) -> FileMemoryBackend:
        """Open (creating) the folder and read its entries."""
        backend = cls(folder)
        await anyio.to_thread.run_sync(private_dir, folder)
        await backend._run(backend._refresh)
        return backend

    async def _run(self, work: Callable[..., T], *args: Any) -> T:
        async with self._lock:
            return await anyio.to_thread.run_sync(work, *args)

    def _path(self, entry_id: str) -> Path:
        return self.folder / f"{entry_id}{SUFFIX}"

    def _refresh(self) -> None:
        """Load files added since the last read and drop those deleted, by any process."""
        present = {
            name[: -len(SUFFIX)]
            for name in os.listdir(self.folder)
            if name.endswith(SUFFIX) and not name.startswith(".")
        }
        for gone in self._cache.keys() - present:
            del self._cache[gone]
        for entry_id in present - self._cache.keys():
            path = self._path(entry_id)
            try:
                text = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                continue  # forgotten by another process since the listing
            entry = parse_file(path, text)
            self._cache[entry_id] = (entry, entry.content.casefold())

    def _store_sync(self, entry: MemoryEntry) -> None:
        path = self._path(entry.id)
        temporary = path.with_name(f".{path.name}.tmp")
        with open(temporary, "w", encoding="utf-8", opener=private_opener) as file:
            file.write(render_file(entry))
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
        self._cache[entry.id] = (entry, entry.content.casefold())

    async def store(self, entry: MemoryEntry) -> None:
        """Write the entry's file."""
        await self._run(self._store_sync, entry)

    def _search_sync(self, query: str, tags: Sequence[str], limit: int) -> list[MemoryHit]:
        self._refresh()
        terms = query_terms(query)
        wanted = set(tags)
        scored = []
        for entry, folded in self._cache.values():
            if not wanted.issubset(entry.tags):
                continue
            score = sum(1 for term in terms if term in folded)
            if score:
                scored.append((score, entry))
        scored.sort(key=lambda pair: (-pair[0], -pair[1].created_at.timestamp()))
        return [MemoryHit(entry=entry, score=float(score)) for score, entry in scored[:limit]]

    async def search(
        self, query: str, *, tags: Sequence[str] = (), limit: int = 5
    ) -> list[MemoryHit]:
        """The entries containing the most query words, best first (newer on a tie)."""
        return await self._run(self._search_sync, query, tuple(tags), limit)

    def _delete_sync(self, entry_id: str) -> bool:
        self._cache.pop(entry_id, None)
        path = self._path(entry_id)
        if "/" in entry_id or path.parent != self.folder:
            return False
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        return True

    async def delete(self, entry_id: str) -> bool:
        """Delete the entry's file; False if there is none."""
        return await self._run(self._delete_sync, entry_id)

    def _list_sync(self, tags: Sequence[str]) -> list[MemoryEntry]:
        self._refresh()
        wanted = set(tags)
        found = [entry for entry, _ in self._cache.values() if wanted.issubset(entry.tags)]
        return sorted(found, key=lambda entry: (entry.created_at, entry.id))

    async def list_all(self, *, tags: Sequence[str] = ()) -> list[MemoryEntry]:
        """Every entry having all of `tags`, oldest first."""
        return await self._run(self._list_sync, tuple(tags))

    async def close(self) -> None:
        """Nothing stays open between calls; drop the cache."""
        self._cache.clear()
