"""`baton._private`: modes of what baton creates, and of what an older baton left wider."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from baton._private import private_dir, private_file, private_opener


@pytest.fixture(autouse=True)
def open_umask() -> Iterator[None]:
    """The most permissive umask: every mode below is baton's doing, not the umask's."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_state_directory_left_open_is_narrowed_up_to_dot_baton(tmp_path: Path) -> None:
    """An existing 0755 `.baton/` and `.baton/journal/` are made 0700 with the new folder
    below them; the workspace above `.baton/` keeps its mode."""
    tmp_path.chmod(0o755)
    (tmp_path / ".baton/journal").mkdir(parents=True, mode=0o755)
    private_dir(tmp_path / ".baton/journal/init")
    assert [0o755, 0o700, 0o700, 0o700] == [
        mode(tmp_path),
        mode(tmp_path / ".baton"),
        mode(tmp_path / ".baton/journal"),
        mode(tmp_path / ".baton/journal/init"),
    ]


def test_a_folder_of_the_callers_own_keeps_its_mode(tmp_path: Path) -> None:
    """Outside `.baton/` only the folders created are private; an existing one is left alone."""
    (tmp_path / "logs").mkdir(mode=0o755)
    private_dir(tmp_path / "logs")
    private_dir(tmp_path / "new/logs")
    assert [0o755, 0o700, 0o700] == [
        mode(tmp_path / "logs"),
        mode(tmp_path / "new"),
        mode(tmp_path / "new/logs"),
    ]


def test_files_are_created_private_and_old_ones_narrowed(tmp_path: Path) -> None:
    """A new file opened with `private_opener` is 0600; an existing 0644 one becomes 0600,
    and `private_file` does the same for a file another library will open."""
    old = tmp_path / "old.jsonl"
    old.write_text("{}\n")
    old.chmod(0o644)
    with open(tmp_path / "new.jsonl", "ab", opener=private_opener) as new:
        new.write(b"{}\n")
    with open(old, "ab", opener=private_opener) as handle:
        handle.write(b"{}\n")
    private_file(tmp_path / "db.sqlite3")
    assert [0o600, 0o600, 0o600] == [
        mode(tmp_path / "new.jsonl"),
        mode(old),
        mode(tmp_path / "db.sqlite3"),
    ]
