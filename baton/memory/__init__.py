"""Long-term memory: entries agents remember across conversations and recall by query
(docs/memory.md)."""

from baton.memory.models import (
    MemoryContext,
    MemoryEntry,
    MemoryHit,
    MemorySettings,
    MemorySource,
)
from baton.memory.protocol import Embedder, MemoryBackend
from baton.memory.store import MemoryStore, open_backend, open_memory, render_entry

__all__ = [
    "Embedder",
    "MemoryBackend",
    "MemoryContext",
    "MemoryEntry",
    "MemoryHit",
    "MemorySettings",
    "MemorySource",
    "MemoryStore",
    "open_backend",
    "open_memory",
    "render_entry",
]
