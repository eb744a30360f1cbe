"""MemoryStore's checks, its token-budgeted context and open_memory's settings
(docs/memory.md, "Interface" and "Settings")."""

from __future__ import annotations

import stat
from pathlib import Path

import pydantic
import pytest

from baton.context.tokens import estimate_text_tokens
from baton.errors import ConfigError
from baton.memory import MemorySettings, MemoryStore, open_memory
from baton.memory.errors import MemoryInputError
from baton.memory.sqlite import SqliteMemoryBackend
from tests.memory.conftest import StepClock


@pytest.fixture
async def memory(tmp_path: Path) -> MemoryStore:
    """A store on the default backend in a fresh workspace."""
    return await open_memory(tmp_path, clock=StepClock())


async def test_open_memory_defaults_to_a_private_sqlite_file(tmp_path: Path) -> None:
    """The default store is SQLite FTS5 at .baton/memory.sqlite3, readable by its user only."""
    store = await open_memory(tmp_path)
    try:
        await store.remember("a first memory")
        assert isinstance(store.backend, SqliteMemoryBackend)
    finally:
        await store.close()
    path = tmp_path / ".baton" / "memory.sqlite3"
    assert 0o600 == stat.S_IMODE(path.stat().st_mode)
    assert 0o700 == stat.S_IMODE(path.parent.stat().st_mode)


@pytest.mark.parametrize("content", ["", "   \n\t"])
async def test_empty_content_is_refused(memory: MemoryStore, content: str) -> None:
    """remember refuses content that is empty or only whitespace."""
    with pytest.raises(MemoryInputError, match="empty"):
        await memory.remember(content)
    await memory.close()


async def test_oversized_content_is_refused_with_the_limit(tmp_path: Path) -> None:
    """remember refuses content over max_entry_chars and says what the limit is."""
    store = await open_memory(tmp_path, MemorySettings(max_entry_chars=10))
    try:
        with pytest.raises(MemoryInputError, match="at most 10 characters"):
            await store.remember("x" * 11)
        assert [] == await store.list()
    finally:
        await store.close()


@pytest.mark.parametrize("tag", ["", "two words", "a,b", "x" * 65, "tab\there"])
async def test_bad_tags_are_refused(memory: MemoryStore, tag: str) -> None:
    """A tag that is empty, too long or holds whitespace or a comma is refused."""
    with pytest.raises(MemoryInputError, match="bad memory tag"):
        await memory.remember("content", tags=[tag])
    await memory.close()


async def test_repeated_tags_are_kept_once(memory: MemoryStore) -> None:
    """Tags given twice are stored once, in the order first given."""
    entry = await memory.remember("content", tags=["b", "a", "b"])
    assert ("b", "a") == entry.tags
    await memory.close()


async def test_recall_refuses_a_limit_below_one(memory: MemoryStore) -> None:
    """recall needs a limit of at least one."""
    with pytest.raises(MemoryInputError, match="limit"):
        await memory.recall("x", limit=0)
    await memory.close()


async def test_a_query_without_words_recalls_the_newest(memory: MemoryStore) -> None:
    """A query with no words returns the newest entries first, scored 0."""
    old = await memory.remember("old fact")
    new = await memory.remember("new fact")
    hits = await memory.recall("?!", limit=5)
    assert [new, old] == [hit.entry for hit in hits]
    assert {0.0} == {hit.score for hit in hits}
    await memory.close()


async def test_context_renders_the_best_entries_within_the_budget(memory: MemoryStore) -> None:
    """context takes the recalled entries in rank order while they fit the token budget."""
    best = await memory.remember("the invoice service retries payments three times")
    await memory.remember("invoice " + "padding words " * 200)
    small = await memory.remember("invoice numbers start at 1000")
    context = await memory.context("invoice service retries", budget_tokens=80)
    assert [best, small] == context.entries
    assert estimate_text_tokens(context.text) == context.tokens
    assert context.tokens <= 80
    assert best.id in context.text
    assert "padding" not in context.text
    await memory.close()


async def test_context_with_nothing_that_fits_is_empty(memory: MemoryStore) -> None:
    """A budget too small for any entry gives an empty text and no tokens."""
    await memory.remember("a fact about caching layers")
    context = await memory.context("caching", budget_tokens=5)
    assert ("", [], 0) == (context.text, context.entries, context.tokens)
    await memory.close()


def test_settings_refuse_unknown_keys() -> None:
    """[memory] settings with an unknown key are refused."""
    with pytest.raises(pydantic.ValidationError, match="extra"):
        MemorySettings.model_validate({"backend": "sqlite", "bakend": "x"})


async def test_vector_backend_without_an_embedder_says_how_to_set_one(tmp_path: Path) -> None:
    """The vector backend with no embedder configured names the setting to add."""
    with pytest.raises(ConfigError, match=r"\[memory\] embedder"):
        await open_memory(tmp_path, MemorySettings(backend="vector"))


async def test_embedder_is_loaded_from_its_module_path(tmp_path: Path) -> None:
    """[memory] embedder = 'module:attribute' builds the embedder the hybrid backend uses."""
    settings = MemorySettings(
        backend="hybrid", embedder="tests.memory.toy_embedder:TrigramEmbedder"
    )
    store = await open_memory(tmp_path, settings)
    try:
        entry = await store.remember("rotate the signing certificate yearly")
        assert entry == (await store.recall("signing certificate"))[0].entry
    finally:
        await store.close()


async def test_a_bad_embedder_path_is_a_config_error(tmp_path: Path) -> None:
    """An embedder setting naming nothing importable is a ConfigError naming it."""
    settings = MemorySettings(backend="vector", embedder="no_such_module_x:make")
    with pytest.raises(ConfigError, match="no_such_module_x:make"):
        await open_memory(tmp_path, settings)


async def test_configured_path_is_relative_to_the_workspace(tmp_path: Path) -> None:
    """[memory] path puts the store's file under the workspace."""
    store = await open_memory(tmp_path, MemorySettings(backend="jsonl", path="notes/mem.jsonl"))
    try:
        await store.remember("kept in notes")
    finally:
        await store.close()
    assert "kept in notes" in (tmp_path / "notes" / "mem.jsonl").read_text(encoding="utf-8")
