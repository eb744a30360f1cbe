"""The file backend: one readable Markdown file per entry (docs/memory.md, "file")."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.memory import MemorySettings, open_memory
from baton.memory.errors import MemoryFileError

SETTINGS = MemorySettings(backend="file")


async def test_each_entry_is_a_markdown_file_with_front_matter(tmp_path: Path) -> None:
    """An entry is `<id>.md`: JSON front matter between --- lines, then the text as given."""
    store = await open_memory(tmp_path, SETTINGS)
    entry = await store.remember("# Heading\n\nbody text", tags=["doc"])
    await store.close()
    text = (tmp_path / ".baton" / "memory" / f"{entry.id}.md").read_text("utf-8")
    head, _, body = text.partition("\n---\n")
    assert "# Heading\n\nbody text" == body
    assert head.startswith("---\n{")
    assert '"tags": ["doc"]' in head


async def test_score_counts_the_query_words_found(tmp_path: Path) -> None:
    """The score is how many query words occur in the text, as substrings, ignoring case."""
    store = await open_memory(tmp_path, SETTINGS)
    try:
        await store.remember("Rotation of KEYS happens monthly")
        hits = await store.recall("key rotat weekly")
        assert [2.0] == [hit.score for hit in hits]
    finally:
        await store.close()


async def test_a_damaged_entry_file_is_named(tmp_path: Path) -> None:
    """An entry file without its front matter stops the read, naming the file."""
    store = await open_memory(tmp_path, SETTINGS)
    await store.close()
    (tmp_path / ".baton" / "memory" / "m-bad.md").write_text("no front matter", "utf-8")
    with pytest.raises(MemoryFileError, match=r"m-bad\.md is not a memory entry file"):
        await open_memory(tmp_path, SETTINGS)
