"""The JSONL backend: a torn last line, a damaged line, the file's lines
(docs/memory.md, "jsonl")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from baton.memory import MemorySettings, MemoryStore, open_memory
from baton.memory.errors import MemoryFileError

SETTINGS = MemorySettings(backend="jsonl")


def memory_file(workspace: Path) -> Path:
    return workspace / ".baton" / "memory.jsonl"


async def test_one_line_per_entry_and_per_deletion(tmp_path: Path) -> None:
    """Each stored entry is one line; forgetting one appends a deletion line."""
    store = await open_memory(tmp_path, SETTINGS)
    entry = await store.remember("one line", tags=["t"])
    await store.forget(entry.id)
    await store.close()
    lines = [json.loads(x) for x in memory_file(tmp_path).read_text("utf-8").splitlines()]
    assert [{"entry": entry.model_dump(mode="json")}, {"deleted": entry.id}] == lines


async def test_a_torn_last_line_is_dropped(tmp_path: Path) -> None:
    """A last line cut short by a crash is dropped with a warning; the others are kept."""
    store = await open_memory(tmp_path, SETTINGS)
    kept = await store.remember("kept entry about kayaks")
    await store.close()
    with memory_file(tmp_path).open("a", encoding="utf-8") as file:
        file.write('{"entry": {"id": "m-torn", "content": "cut sh')
    with capture_logs() as logs:
        store = await open_memory(tmp_path, SETTINGS)
    try:
        assert ["memory.torn_line_dropped"] == [line["event"] for line in logs]
        assert [kept] == await store.list()
        newer = await store.remember("newer entry about canoes")
        assert [kept, newer] == await store.list()
    finally:
        await store.close()


async def test_a_damaged_middle_line_is_named(tmp_path: Path) -> None:
    """A damaged line that is not the last stops the open, naming the file and line."""
    store = await open_memory(tmp_path, SETTINGS)
    await store.remember("first")
    await store.close()
    with memory_file(tmp_path).open("a", encoding="utf-8") as file:
        file.write("not json\n")
        file.write('{"deleted": "m-x"}\n')
    with pytest.raises(MemoryFileError, match=r"memory.jsonl line 2 is not a memory entry"):
        await open_memory(tmp_path, SETTINGS)


async def test_two_stores_see_each_others_lines(tmp_path: Path) -> None:
    """A store reads the lines another store appended to the same file before it searches."""
    one = await open_memory(tmp_path, SETTINGS)
    two = await open_memory(tmp_path, SETTINGS)
    try:
        entry = await one.remember("the release train leaves fridays")
        assert entry == (await two.recall("release train"))[0].entry
        await two.forget(entry.id)
        assert [] == await one.list()
    finally:
        await one.close()
        await two.close()


async def test_bm25_prefers_the_shorter_of_two_equal_matches(tmp_path: Path) -> None:
    """Of two entries with the query word once, the shorter scores higher (length norm)."""
    store: MemoryStore = await open_memory(tmp_path, SETTINGS)
    try:
        await store.remember("quokka " + "filler " * 30)
        short = await store.remember("quokka here")
        hits = await store.recall("quokka")
        assert short == hits[0].entry
        assert hits[0].score > hits[1].score
    finally:
        await store.close()
