"""What a memory backend and an embedder implement (docs/memory.md, "Backends").

The store (`MemoryStore`) validates input and builds entries; a backend only keeps and finds
them. Adding a backend touches one module and one line of `baton.memory.store`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from baton.memory.models import MemoryEntry, MemoryHit


@runtime_checkable
class MemoryBackend(Protocol):
    """Keeps memory entries and finds them by a text query."""

    async def store(self, entry: MemoryEntry) -> None:
        """Keep `entry` (its id is new)."""
        ...

    async def search(
        self, query: str, *, tags: Sequence[str] = (), limit: int = 5
    ) -> list[MemoryHit]:
        """The entries most relevant to `query` having all of `tags`, best first."""
        ...

    async def delete(self, entry_id: str) -> bool:
        """Remove the entry; False if there was none with that id."""
        ...

    async def list_all(self, *, tags: Sequence[str] = ()) -> list[MemoryEntry]:
        """Every entry having all of `tags`, oldest first."""
        ...

    async def close(self) -> None:
        """Release the backend's files and connections."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of `dimensions` floats, for the vector and hybrid backends."""

    @property
    def dimensions(self) -> int:
        """The length of every vector `embed` returns."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order."""
        ...
