"""Long-term memory: entries agents remember across conversations and recall by query
(docs/memory.md).

Every name is imported on first use: the client and `baton --help` use the entries' shapes
(`baton.memory.models`) without loading the store and its backends (docs/architecture.md,
"What a command imports")."""

from typing import TYPE_CHECKING

from baton._lazy import lazy_exports

if TYPE_CHECKING:
    from baton.memory.models import (
        MemoryContext,
        MemoryEntry,
        MemoryHit,
        MemorySettings,
        MemorySource,
    )
    from baton.memory.protocol import Embedder, MemoryBackend
    from baton.memory.store import MemoryStore, open_backend, open_memory, render_entry

__getattr__ = lazy_exports(
    __name__,
    {
        "MemoryContext": "baton.memory.models",
        "MemoryEntry": "baton.memory.models",
        "MemoryHit": "baton.memory.models",
        "MemorySettings": "baton.memory.models",
        "MemorySource": "baton.memory.models",
        "Embedder": "baton.memory.protocol",
        "MemoryBackend": "baton.memory.protocol",
        "MemoryStore": "baton.memory.store",
        "open_backend": "baton.memory.store",
        "open_memory": "baton.memory.store",
        "render_entry": "baton.memory.store",
    },
)

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
