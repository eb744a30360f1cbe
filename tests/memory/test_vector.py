"""The vector and hybrid backends: the missing extra, vectors kept in step with the entries
(docs/memory.md, "vector" and "hybrid")."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from baton.memory import MemorySettings, open_memory
from baton.memory.errors import MissingExtraError
from tests.memory.toy_embedder import TrigramEmbedder

VECTOR = MemorySettings(backend="vector")
HYBRID = MemorySettings(backend="hybrid")


async def test_missing_extra_names_the_pip_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without sqlite-vec installed the error is one line naming pip install 'baton[vector]'."""
    monkeypatch.setitem(sys.modules, "sqlite_vec", None)
    with pytest.raises(MissingExtraError) as caught:
        await open_memory(tmp_path, VECTOR, embedder=TrigramEmbedder())
    assert "pip install 'baton[vector]'" in str(caught.value)
    assert "\n" not in str(caught.value)


async def test_entries_of_the_plain_backend_are_embedded_at_open(tmp_path: Path) -> None:
    """Entries stored by the sqlite backend get vectors when the vector backend opens."""
    plain = await open_memory(tmp_path)
    entry = await plain.remember("the quarterly audit checklist")
    await plain.close()
    embedder = TrigramEmbedder()
    store = await open_memory(tmp_path, VECTOR, embedder=embedder)
    try:
        assert entry == (await store.recall("quarterly audit"))[0].entry
    finally:
        await store.close()


async def test_another_embedder_rebuilds_the_vectors(tmp_path: Path) -> None:
    """Opening with an embedder of another size re-embeds every entry, with a warning."""
    store = await open_memory(tmp_path, VECTOR, embedder=TrigramEmbedder(64))
    entry = await store.remember("penguins nest on the ice shelf")
    await store.close()
    with capture_logs() as logs:
        store = await open_memory(tmp_path, VECTOR, embedder=TrigramEmbedder(32))
    try:
        assert ["memory.vectors_rebuilt"] == [line["event"] for line in logs]
        assert entry == (await store.recall("penguin nesting"))[0].entry
    finally:
        await store.close()


async def test_hybrid_finds_a_paraphrase_that_bm25_misses(tmp_path: Path) -> None:
    """A query sharing only word pieces with an entry is found by hybrid, not by BM25."""
    store = await open_memory(tmp_path, HYBRID, embedder=TrigramEmbedder())
    try:
        entry = await store.remember("the gateway was redeployed yesterday")
        await store.remember("lunch menu for friday")
        assert [] == await _bm25_only(tmp_path, "deploy")
        assert entry == (await store.recall("deploy"))[0].entry
    finally:
        await store.close()


async def _bm25_only(workspace: Path, query: str) -> list[object]:
    plain = await open_memory(workspace)
    try:
        return [hit.entry for hit in await plain.recall(query)]
    finally:
        await plain.close()
