"""`MemoryStore`, the one door to long-term memory, and `open_memory`, which picks its
backend from the settings (docs/memory.md, "Interface").

The store checks what it is given and builds the entries; the backend only keeps and finds
them, so every backend sees the same validated input.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import JsonValue

from baton._private import STATE_DIR
from baton.context.tokens import estimate_text_tokens
from baton.errors import ConfigError
from baton.memory._text import check_tags, new_entry_id
from baton.memory.errors import MemoryInputError, UnknownMemoryError
from baton.memory.file import FileMemoryBackend
from baton.memory.jsonl import JsonlMemoryBackend
from baton.memory.models import (
    MemoryContext,
    MemoryEntry,
    MemoryHit,
    MemorySettings,
    MemorySource,
)
from baton.memory.protocol import Embedder, MemoryBackend
from baton.memory.sqlite import SqliteMemoryBackend

Clock = Callable[[], datetime]

CONTEXT_HEADER = "Long-term memory (recalled entries, most relevant first; they may be outdated):"


def _utc_now() -> datetime:
    return datetime.now(UTC)


def render_entry(entry: MemoryEntry) -> str:
    """One entry as it appears in a memory context block."""
    about = entry.created_at.date().isoformat()
    if entry.tags:
        about += "; tags: " + ", ".join(entry.tags)
    return f"[{entry.id}] ({about})\n{entry.content}"


class MemoryStore:
    """Remember, recall and forget entries of long-term memory, on any backend."""

    def __init__(
        self, backend: MemoryBackend, *, max_entry_chars: int = 8000, clock: Clock = _utc_now
    ) -> None:
        self.backend = backend
        self.max_entry_chars = max_entry_chars
        self._clock = clock

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def remember(
        self,
        content: str,
        *,
        tags: Sequence[str] = (),
        source: MemorySource | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
    ) -> MemoryEntry:
        """Store `content` as a new entry and return it."""
        if not content.strip():
            raise MemoryInputError("a memory entry needs some text; the content is empty")
        if len(content) > self.max_entry_chars:
            raise MemoryInputError(
                f"a memory entry holds at most {self.max_entry_chars} characters and this one "
                f"has {len(content)} — store a shorter summary, or raise [memory] "
                "max_entry_chars"
            )
        entry = MemoryEntry(
            id=new_entry_id(),
            content=content,
            tags=check_tags(tags),
            created_at=self._clock(),
            source=source or MemorySource(),
            metadata=dict(metadata or {}),
        )
        await self.backend.store(entry)
        return entry

    async def recall(
        self, query: str, *, tags: Sequence[str] = (), limit: int = 5
    ) -> list[MemoryHit]:
        """The entries most relevant to `query` that have all of `tags`, best first.

        A query without a single word recalls the newest entries, with score 0."""
        tags = check_tags(tags)
        if limit < 1:
            raise MemoryInputError(f"recall needs a limit of at least 1, not {limit}")
        hits = await self.backend.search(query, tags=tags, limit=limit)
        if hits or any(ch.isalnum() for ch in query):
            return hits
        newest = (await self.backend.list_all(tags=tags))[-limit:]
        return [MemoryHit(entry=entry, score=0.0) for entry in reversed(newest)]

    async def forget(self, entry_id: str) -> MemoryEntry:
        """Delete the entry with this id and return it; UnknownMemoryError if there is none."""
        for entry in await self.backend.list_all():
            if entry.id == entry_id:
                if await self.backend.delete(entry_id):
                    return entry
                break
        raise UnknownMemoryError(entry_id)

    async def list(self, *, tags: Sequence[str] = ()) -> list[MemoryEntry]:
        """Every entry that has all of `tags`, oldest first."""
        return await self.backend.list_all(tags=check_tags(tags))

    async def context(
        self, query: str, *, tags: Sequence[str] = (), budget_tokens: int, limit: int = 10
    ) -> MemoryContext:
        """The best recalled entries that fit `budget_tokens`, rendered as one text block.

        Entries are taken in rank order; one that does not fit is skipped and a smaller one
        after it may still be taken. Tokens are baton's usual estimate (baton.context.tokens).
        """
        if budget_tokens < 0:
            raise MemoryInputError(f"budget_tokens must be 0 or more, not {budget_tokens}")
        hits = await self.recall(query, tags=tags, limit=limit)
        chosen: list[MemoryEntry] = []
        text = ""
        tokens = 0
        for hit in hits:
            candidate = "\n\n".join(
                [CONTEXT_HEADER, *(render_entry(e) for e in [*chosen, hit.entry])]
            )
            candidate_tokens = estimate_text_tokens(candidate)
            if candidate_tokens <= budget_tokens:
                chosen.append(hit.entry)
                text, tokens = candidate, candidate_tokens
        return MemoryContext(text=text, entries=chosen, tokens=tokens)

    async def close(self) -> None:
        """Close the backend."""
        await self.backend.close()


def default_path(workspace: Path, settings: MemorySettings) -> Path:
    """Where the configured backend keeps its data (docs/memory.md, "Files")."""
    if settings.path is not None:
        path = Path(settings.path)
        return path if path.is_absolute() else workspace / path
    state = workspace / STATE_DIR
    if settings.backend == "jsonl":
        return state / "memory.jsonl"
    if settings.backend == "file":
        return state / "memory"
    return state / "memory.sqlite3"


def load_embedder(spec: str) -> Embedder:
    """The embedder named `module:attribute` (an Embedder, or a callable returning one)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ConfigError(
            f"[memory] embedder = {spec!r} must be 'module:attribute', e.g. 'mypkg.embed:make'"
        )
    try:
        target = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"[memory] embedder = {spec!r} cannot be loaded: {error}") from error
    # A class is called too: it matches the protocol by its attributes, as an instance does.
    is_instance = isinstance(target, Embedder) and not isinstance(target, type)
    embedder = target if is_instance or not callable(target) else target()
    if not isinstance(embedder, Embedder):
        raise ConfigError(
            f"[memory] embedder = {spec!r} is not an Embedder (it needs `dimensions` and an "
            "async `embed(texts)`)"
        )
    return embedder


async def open_backend(
    workspace: Path, settings: MemorySettings, *, embedder: Embedder | None = None
) -> MemoryBackend:
    """Open the backend the settings name, at its default or configured path."""
    path = default_path(workspace, settings)
    if settings.backend == "sqlite":
        return await SqliteMemoryBackend.open(path)
    if settings.backend == "jsonl":
        return await JsonlMemoryBackend.open(path)
    if settings.backend == "file":
        return await FileMemoryBackend.open(path)
    if embedder is None:
        if settings.embedder is None:
            raise ConfigError(
                f"[memory] backend = {settings.backend!r} needs an embedder: set [memory] "
                "embedder = 'module:attribute' (docs/memory.md, \"Plugging in an embedder\")"
            )
        embedder = load_embedder(settings.embedder)
    # Imported here: only these backends need the `vector` extra.
    from baton.memory.vector import HybridMemoryBackend, VectorMemoryBackend  # noqa: PLC0415

    if settings.backend == "vector":
        return await VectorMemoryBackend.open(path, embedder)
    return await HybridMemoryBackend.open(path, embedder)


async def open_memory(
    workspace: Path,
    settings: MemorySettings | None = None,
    *,
    embedder: Embedder | None = None,
    clock: Clock = _utc_now,
) -> MemoryStore:
    """Open the workspace's long-term memory: by default SQLite FTS5 at
    `<workspace>/.baton/memory.sqlite3`. `embedder` overrides `[memory] embedder`."""
    settings = settings or MemorySettings()
    backend = await open_backend(workspace, settings, embedder=embedder)
    return MemoryStore(backend, max_entry_chars=settings.max_entry_chars, clock=clock)
