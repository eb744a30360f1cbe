"""The contract every memory backend keeps (docs/memory.md, "Backends"): one suite, run on
the file, jsonl, sqlite, vector and hybrid backends alike."""

from __future__ import annotations

import anyio
import pytest

from baton.memory import MemoryEntry, MemorySource, MemoryStore
from baton.memory.errors import UnknownMemoryError
from tests.memory.conftest import OpenBackend, StepClock


async def test_stored_entries_are_listed_oldest_first(store: MemoryStore) -> None:
    """list returns every stored entry, whole and in the order it was stored."""
    first = await store.remember(
        "the build uses hatchling",
        tags=["build"],
        source=MemorySource(agent="init", conversation="c1"),
        metadata={"confidence": 0.9, "refs": ["pyproject.toml"]},
    )
    second = await store.remember("tests run with pytest")
    assert [first, second] == await store.list()


async def test_search_finds_the_entry_sharing_the_query_words(store: MemoryStore) -> None:
    """recall returns the entry holding the query's words first."""
    await store.remember("lunch is served at noon in the cafeteria")
    wanted = await store.remember("the deploy key is rotated on the first monday")
    hits = await store.recall("deploy key rotated")
    assert wanted == hits[0].entry


async def test_the_entry_sharing_the_rare_words_ranks_first(store: MemoryStore) -> None:
    """An entry sharing the query's rare words outranks many sharing only a common one."""
    for n in range(6):
        await store.remember(f"project note {n}: the project compiles on linux")
    rare = await store.remember("project zeppelin hangar permits expire in march")
    await store.remember("project timeline is on the wiki")
    hits = await store.recall("zeppelin hangar project", limit=3)
    assert rare == hits[0].entry
    assert hits[0].score > hits[1].score


async def test_tags_filter_search_and_list_to_entries_having_all(store: MemoryStore) -> None:
    """With tags, only entries having every given tag are searched and listed."""
    both = await store.remember("postgres runs on port 5432", tags=["db", "ops"])
    await store.remember("postgres backups run nightly", tags=["db"])
    await store.remember("postgres is the main datastore", tags=["ops"])
    hits = await store.recall("postgres", tags=["ops", "db"])
    assert [both] == [hit.entry for hit in hits]
    assert [both] == await store.list(tags=["db", "ops"])
    assert 2 == len(await store.list(tags=["db"]))


async def test_forget_removes_the_entry_everywhere(store: MemoryStore) -> None:
    """A forgotten entry is returned once, then neither listed nor recalled."""
    kept = await store.remember("alpha release ships in june")
    gone = await store.remember("alpha release notes live in docs")
    assert gone == await store.forget(gone.id)
    assert [kept] == await store.list()
    assert [kept] == [hit.entry for hit in await store.recall("alpha release notes")]


async def test_unknown_delete_is_false_and_forget_names_the_id(store: MemoryStore) -> None:
    """Deleting an unknown id returns False; forgetting it raises naming the id."""
    await store.remember("something to keep")
    assert False is await store.backend.delete("m-000000000000")
    with pytest.raises(UnknownMemoryError, match="m-000000000000"):
        await store.forget("m-000000000000")


async def test_unicode_content_round_trips_and_is_found(store: MemoryStore) -> None:
    """Non-ASCII text and tags are stored as given and found by their words."""
    entry = await store.remember(
        "Grüße aus München: 東京 meeting, café ☕ at 9", tags=["réunion", "東京"]
    )
    assert [entry] == await store.list(tags=["東京"])
    hits = await store.recall("münchen 東京")
    assert entry == hits[0].entry


async def test_entries_survive_close_and_reopen(open_memory_backend: OpenBackend) -> None:
    """What one backend stored, another opened later on the same files lists and finds."""
    first = MemoryStore(await open_memory_backend(), clock=StepClock())
    entry = await first.remember("the staging cluster lives in eu-west", tags=["infra"])
    await first.close()
    second = MemoryStore(await open_memory_backend())
    try:
        assert [entry] == await second.list()
        assert entry == (await second.recall("staging cluster", tags=["infra"]))[0].entry
    finally:
        await second.close()


async def test_concurrent_stores_all_land(store: MemoryStore) -> None:
    """Entries remembered by many tasks at once are all kept, none twice."""
    stored: list[MemoryEntry] = []

    async def remember(n: int) -> None:
        stored.append(await store.remember(f"concurrent fact number {n}", tags=["bulk"]))

    async with anyio.create_task_group() as tg:
        for n in range(25):
            tg.start_soon(remember, n)
    assert sorted(e.id for e in stored) == sorted(e.id for e in await store.list(tags=["bulk"]))
    assert 25 == len({e.id for e in stored})
