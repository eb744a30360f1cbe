"""Backends for the memory tests: each opened on a fresh path under the test's tmp_path."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from baton.memory import MemoryBackend, MemorySettings, MemoryStore, open_backend
from tests.memory.toy_embedder import TrigramEmbedder

BACKENDS = ["file", "jsonl", "sqlite", "vector", "hybrid"]

OpenBackend = Callable[[], Awaitable[MemoryBackend]]


class StepClock:
    """A clock that moves one second per reading, so entries' order is their store order."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def opener(kind: str, workspace: Path) -> OpenBackend:
    """A function opening a new backend of `kind` on the workspace's memory files."""
    embedder = TrigramEmbedder()

    async def open_it() -> MemoryBackend:
        return await open_backend(workspace, MemorySettings(backend=kind), embedder=embedder)  # type: ignore[arg-type]

    return open_it


@pytest.fixture(params=BACKENDS)
def open_memory_backend(request: pytest.FixtureRequest, tmp_path: Path) -> OpenBackend:
    """Opens a backend of the parametrized kind; each call opens another on the same files."""
    return opener(str(request.param), tmp_path)


@pytest.fixture
async def store(open_memory_backend: OpenBackend) -> AsyncIterator[MemoryStore]:
    """A MemoryStore over the parametrized backend, with a clock stepping one second."""
    memory = MemoryStore(await open_memory_backend(), clock=StepClock())
    yield memory
    await memory.close()
