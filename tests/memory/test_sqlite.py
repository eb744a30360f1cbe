"""The SQLite FTS5 backend: sharing one file between connections and processes, and
rebuilding a damaged index from the entries table (docs/memory.md, "sqlite")."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import anyio
import pytest
from structlog.testing import capture_logs

from baton.memory import MemoryStore, open_memory
from baton.memory.errors import MemoryFileError
from baton.memory.sqlite import SqliteMemoryBackend

WRITER = """
import sys, anyio
from pathlib import Path
from baton.memory import MemoryStore
from baton.memory.sqlite import SqliteMemoryBackend

async def main() -> None:
    store = MemoryStore(await SqliteMemoryBackend.open(Path(sys.argv[1])))
    for n in range(40):
        await store.remember(f"written by the other process, fact {n}", tags=["child"])
    await store.close()

anyio.run(main)
"""


async def test_two_connections_share_one_file(tmp_path: Path) -> None:
    """Two stores on one file, writing at once, each see all of both's entries."""
    path = tmp_path / "memory.sqlite3"
    one = MemoryStore(await SqliteMemoryBackend.open(path))
    two = MemoryStore(await SqliteMemoryBackend.open(path))

    async def fill(store: MemoryStore, tag: str) -> None:
        for n in range(30):
            await store.remember(f"{tag} fact {n}", tags=[tag])

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(fill, one, "left")
            tg.start_soon(fill, two, "right")
        assert 60 == len(await one.list())
        assert 30 == len(await two.list(tags=["left"]))
        assert "right fact 7" == (await one.recall("right fact 7", tags=["right"]))[0].entry.content
    finally:
        await one.close()
        await two.close()


async def test_another_process_writes_the_same_file(tmp_path: Path) -> None:
    """Entries a second process stores while this one stores are all kept and searchable."""
    path = tmp_path / "memory.sqlite3"
    store = MemoryStore(await SqliteMemoryBackend.open(path))
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.run_process, [sys.executable, "-c", WRITER, str(path)])
            for n in range(40):
                await store.remember(f"written by this process, fact {n}", tags=["parent"])
        assert 40 == len(await store.list(tags=["child"]))
        assert 40 == len(await store.list(tags=["parent"]))
        hits = await store.recall("other process", tags=["child"], limit=50)
        assert 40 == len(hits)
    finally:
        await store.close()


async def test_a_damaged_index_is_rebuilt_and_nothing_is_lost(tmp_path: Path) -> None:
    """A corrupted FTS5 shadow table is rebuilt at open, with a warning; search finds all."""
    store = await open_memory(tmp_path)
    for n in range(30):
        await store.remember(f"entry {n} mentions walrus{n} and the harbour")
    await store.close()
    path = tmp_path / ".baton" / "memory.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("UPDATE memory_fts_data SET block = zeroblob(length(block)) WHERE id > 10")
    db.close()
    with capture_logs() as logs:
        store = await open_memory(tmp_path)
    try:
        assert ["memory.index_rebuilt"] == [line["event"] for line in logs]
        hits = await store.recall("walrus17")
        assert "entry 17 mentions walrus17 and the harbour" == hits[0].entry.content
        assert 30 == len(await store.recall("harbour", limit=100))
    finally:
        await store.close()


async def test_a_file_that_is_not_a_database_is_named(tmp_path: Path) -> None:
    """A memory file holding something else stops the open with an error naming it."""
    path = tmp_path / ".baton" / "memory.sqlite3"
    path.parent.mkdir()
    path.write_bytes(b"this is not sqlite at all, just text " * 200)
    with pytest.raises(MemoryFileError, match=r"memory\.sqlite3 is not a readable memory"):
        await open_memory(tmp_path)
