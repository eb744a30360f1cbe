"""The data of long-term memory: an entry, a search hit, a rendered context, the settings.

Entries are frozen: a memory is stored, recalled and forgotten, never edited in place
(docs/memory.md, "Interface").
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

BackendName = Literal["sqlite", "jsonl", "file", "vector", "hybrid"]


class MemorySource(BaseModel):
    """Where a memory came from: the agent that stored it and its conversation, if any."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: str | None = None
    conversation: str | None = None


class MemoryEntry(BaseModel):
    """One stored memory: its text, tags, when it was stored, where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    content: str
    tags: tuple[str, ...] = ()
    created_at: datetime
    source: MemorySource = MemorySource()
    metadata: dict[str, JsonValue] = Field(default_factory=dict)


class MemoryHit(BaseModel):
    """An entry found by a search and its score: higher is more relevant; scores compare
    only within one search of one backend."""

    model_config = ConfigDict(frozen=True)

    entry: MemoryEntry
    score: float


class MemoryContext(BaseModel):
    """Recalled entries rendered as one text block for a prompt, and its estimated tokens."""

    text: str
    entries: list[MemoryEntry]
    tokens: int


class MemorySettings(BaseModel):
    """The `[memory]` table of baton.toml (docs/memory.md, "Settings")."""

    model_config = ConfigDict(extra="forbid")

    backend: BackendName = "sqlite"
    # Relative to the workspace; by default `.baton/memory.sqlite3` (sqlite, vector, hybrid),
    # `.baton/memory.jsonl` (jsonl) or the folder `.baton/memory/` (file).
    path: str | None = None
    max_entry_chars: int = Field(default=8000, gt=0)
    # `module:attribute` naming an Embedder, or a callable returning one, for the vector
    # and hybrid backends (docs/memory.md, "Plugging in an embedder").
    embedder: str | None = None
