"""Which query words a search matches: the rarest within a budget, or, when every word is
common, the newest entries holding them all (docs/memory.md, "Ranking")."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from baton.memory import MemoryEntry, MemorySettings, MemoryStore, _bm25, _fts_search, open_memory
from baton.memory._bm25 import Bm25Index
from baton.memory._text import selective_terms
from tests.memory.conftest import StepClock


def test_selective_terms_keeps_the_rarest_within_the_budget() -> None:
    """The rarest words are kept, in query order, while their entries fit the budget."""
    counts = {"the": 900, "zebra": 3, "stripes": 40, "of": 800}
    assert ["zebra", "stripes"] == selective_terms(
        ["the", "zebra", "of", "stripes"], counts.__getitem__, budget=100
    )


def test_selective_terms_is_empty_when_every_word_is_common() -> None:
    """No word is kept when even the rarest holds more entries than the budget."""
    counts = {"the": 900, "of": 800}
    assert [] == selective_terms(["the", "of"], counts.__getitem__, budget=100)


def small_budget(budget: int) -> Callable[[Sequence[str], Callable[[str], int]], list[str]]:
    def choose(terms: Sequence[str], frequency: Callable[[str], int]) -> list[str]:
        return selective_terms(terms, frequency, budget=budget)

    return choose


@pytest.fixture(params=["sqlite", "jsonl"])
async def tight_store(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> MemoryStore:
    """A BM25 store whose match budget is 4 entries, holding 8 entries with "common"."""
    monkeypatch.setattr(_fts_search, "selective_terms", small_budget(4))
    monkeypatch.setattr(_bm25, "selective_terms", small_budget(4))
    store = await open_memory(tmp_path, MemorySettings(backend=request.param), clock=StepClock())
    for n in range(8):
        await store.remember(f"common note number {n} with shared words")
    return store


async def test_a_common_word_is_left_out_beside_a_rare_one(tight_store: MemoryStore) -> None:
    """The entry with the rare word is found; the common word does not flood the results."""
    rare = await tight_store.remember("common quasar sighting")
    hits = await tight_store.recall("quasar common")
    assert [rare] == [hit.entry for hit in hits]
    await tight_store.close()


async def test_only_common_words_give_the_newest_holding_all(tight_store: MemoryStore) -> None:
    """With every word common, the newest entries holding all of them are returned."""
    entries = await tight_store.list()
    hits = await tight_store.recall("common shared", limit=3)
    assert {e.id for e in entries[-3:]} == {hit.entry.id for hit in hits}
    await tight_store.close()


async def test_common_words_no_entry_holds_together_fill_with_any(
    tight_store: MemoryStore,
) -> None:
    """When fewer entries hold all the common words than asked, ones holding any fill in."""
    entries = await tight_store.list()
    hits = await tight_store.recall("common nowhere", limit=2)
    assert {e.id for e in entries[-2:]} == {hit.entry.id for hit in hits}
    await tight_store.close()


def test_bm25_removes_a_document_from_its_postings() -> None:
    """A removed document is scored no more and its words' postings shrink."""
    index = Bm25Index()
    index.add("a", ["alpha", "beta"])
    index.add("b", ["alpha"])
    index.remove("a")
    assert ["b"] == list(index.scores(["alpha", "beta"]))
    assert 1 == len(index)


async def test_store_many_keeps_entries_like_store(tmp_path: Path) -> None:
    """store_many (sqlite, jsonl, vector) stores a batch that lists and searches as one by one."""
    from tests.memory.toy_embedder import TrigramEmbedder  # noqa: PLC0415

    start = datetime(2026, 1, 1, tzinfo=UTC)
    batch = [
        MemoryEntry(
            id=f"m-{n:012x}",
            content=f"imported fact {n} about otters",
            created_at=start + timedelta(seconds=n),
        )
        for n in range(5)
    ]
    for kind in ("sqlite", "jsonl", "vector"):
        store = await open_memory(
            tmp_path / kind,
            MemorySettings(backend=kind),
            embedder=TrigramEmbedder(),  # type: ignore[arg-type]
        )
        try:
            await store.backend.store_many(batch)  # type: ignore[attr-defined]
            assert batch == await store.list()
            assert batch[3] == (await store.recall("imported fact 3 otters"))[0].entry
        finally:
            await store.close()
