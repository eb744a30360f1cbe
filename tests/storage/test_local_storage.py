"""`LocalStorage` beyond the contract: what a folder can hold that a bucket cannot (links,
write leftovers, empty folders, a full disk) (docs/storage.md, "Local")."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from baton.errors import DiskFullFailure
from baton.storage import Listing, LocalStorage, ObjectInfo
from baton.storage.errors import ObjectNotFoundError, StorageFailure


async def test_a_link_on_the_way_is_refused_and_nothing_lands_outside(tmp_path: Path) -> None:
    """A folder swapped for a link is refused for reads and writes; nothing lands outside."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_bytes(b"secret")
    root.mkdir()
    (root / "scenarios").symlink_to(outside)
    storage = LocalStorage(root)
    with pytest.raises(StorageFailure, match="follows no links"):
        await storage.write("scenarios/planted.md", b"x")
    with pytest.raises(StorageFailure, match="follows no links"):
        await storage.read("scenarios/secret.md")
    assert ["secret.md"] == os.listdir(outside)


async def test_a_link_as_the_object_is_not_followed(tmp_path: Path) -> None:
    """A link where an object would be is never followed: refused, unlisted, replaced itself."""
    (tmp_path / "target.md").write_bytes(b"target")
    root = tmp_path / "root"
    root.mkdir()
    (root / "link.md").symlink_to(tmp_path / "target.md")
    storage = LocalStorage(root)
    with pytest.raises(StorageFailure, match="is a symbolic link"):
        await storage.read("link.md")
    seen = (await storage.stat("link.md"), await storage.list())
    await storage.write("link.md", b"mine")
    assert ((None, Listing()), b"target", b"mine", False) == (
        seen,
        (tmp_path / "target.md").read_bytes(),
        await storage.read("link.md"),
        (root / "link.md").is_symlink(),
    )


async def test_write_leftovers_and_empty_folders_are_not_listed(tmp_path: Path) -> None:
    """A killed writer's temp file and a folder with no object in it are not listed."""
    storage = LocalStorage(tmp_path)
    await storage.write("scenarios/demo/design.md", b"d")
    (tmp_path / "scenarios/demo/.design.md.0123456789ab.tmp").write_bytes(b"half")
    (tmp_path / "scenarios/empty/inner").mkdir(parents=True)
    assert (
        Listing((ObjectInfo("demo/design.md", 1),)),
        Listing((), ("demo",)),
        None,
    ) == (
        await storage.list("scenarios"),
        await storage.list("scenarios", recursive=False),
        await storage.stat("scenarios/demo/.design.md.0123456789ab.tmp"),
    )


async def test_a_full_disk_is_the_disk_full_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write refused for space is `DiskFullFailure`, and the old object stays."""
    storage = LocalStorage(tmp_path)
    await storage.write("a.md", b"old")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(DiskFullFailure, match="no space left to write"):
        await storage.write("a.md", b"new")
    monkeypatch.undo()
    assert (b"old", ["a.md"]) == (await storage.read("a.md"), os.listdir(tmp_path))


async def test_a_file_where_a_folder_would_be(tmp_path: Path) -> None:
    """Under a file there is no object; writing under it is refused, saying why."""
    storage = LocalStorage(tmp_path)
    await storage.write("scenarios", b"a file")
    with pytest.raises(ObjectNotFoundError):
        await storage.read("scenarios/demo/a.md")
    with pytest.raises(StorageFailure, match="not a folder"):
        await storage.write("scenarios/demo/a.md", b"x")
    assert (None, Listing()) == (
        await storage.stat("scenarios/demo/a.md"),
        await storage.list("scenarios/demo"),
    )


async def test_a_named_pipe_is_refused_at_once(tmp_path: Path) -> None:
    """A FIFO planted where an object is read fails at once instead of waiting for a writer."""
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(StorageFailure, match="named pipe"):
        await LocalStorage(tmp_path).read("pipe")


async def test_check_names_a_missing_or_wrong_root(tmp_path: Path) -> None:
    """`check` refuses a root that is missing or not a folder, naming it."""
    (tmp_path / "file").write_bytes(b"")
    messages = []
    for root in (tmp_path / "missing", tmp_path / "file"):
        with pytest.raises(StorageFailure) as caught:
            await LocalStorage(root).check()
        messages.append(str(caught.value))
    assert [
        f"storage folder {tmp_path / 'missing'} cannot be used: No such file or directory — "
        "check the workspace path",
        f"storage folder {tmp_path / 'file'} is not a folder — check the path",
    ] == messages
