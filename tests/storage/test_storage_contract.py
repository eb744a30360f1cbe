"""The `Storage` contract, held by every backend alike: the workspace folder (`local`) and an
S3 bucket on a real SeaweedFS (`s3`) (docs/storage.md, "The interface")."""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import pytest
from gate_proxy import gate_proxy

from baton.errors import BatonError
from baton.storage import Listing, LocalStorage, ObjectInfo, ObjectStorage, Storage, open_storage
from baton.storage.errors import ObjectNotFoundError, StoragePathError

OLD = b"old content, whole"
NEW = os.urandom(1024 * 1024)  # large enough that a body is sent in many pieces


@dataclass
class Backend:
    """A store, and a way to get a second handle on it whose next write stops midway:
    held until released, or cut there."""

    storage: Storage
    midway: Callable[[bool], AbstractAsyncContextManager[tuple[Storage, Midway]]]


@dataclass
class Midway:
    """Where a held write stands: `reached` once it is midway, `release` to let it finish."""

    reached: Callable[[], Awaitable[None]]
    release: Callable[[], None]


def _local(root: Path, monkeypatch: pytest.MonkeyPatch) -> Backend:
    storage = LocalStorage(root)

    @asynccontextmanager
    async def midway(cut: bool) -> AsyncIterator[tuple[Storage, Midway]]:
        reached, release = threading.Event(), threading.Event()
        real_write = os.write

        def half_then_stop(fd: int, data: bytes) -> int:
            if len(data) != len(NEW):
                return real_write(fd, data)
            written = real_write(fd, data[: len(data) // 2])
            reached.set()
            if cut:
                raise OSError(5, "Input/output error")
            release.wait(30)
            return written

        async def wait_reached() -> None:
            await anyio.to_thread.run_sync(reached.wait, 30)

        with monkeypatch.context() as patch:
            patch.setattr(os, "write", half_then_stop)
            try:
                yield storage, Midway(wait_reached, release.set)
            finally:
                release.set()

    return Backend(storage, midway)


def _s3(url: str, tmp_path: Path) -> Backend:
    storage = open_storage(url, tmp_path)
    assert isinstance(storage, ObjectStorage)
    s3_port = urlsplit(os.environ["AWS_ENDPOINT_URL"]).port
    assert s3_port is not None
    bucket = urlsplit(url)

    @asynccontextmanager
    async def midway(cut: bool) -> AsyncIterator[tuple[Storage, Midway]]:
        async with gate_proxy(s3_port, len(NEW) // 2, cut=cut) as proxy:
            through = ObjectStorage(
                bucket.netloc,
                bucket.path.lstrip("/"),
                environ={**os.environ, "AWS_ENDPOINT_URL": proxy.endpoint},
            )

            async def wait_reached() -> None:
                with anyio.fail_after(30):
                    await proxy.reached.wait()

            yield through, Midway(wait_reached, proxy.release.set)

    return Backend(storage, midway)


@pytest.fixture(params=["local", "s3"])
def backend(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Backend:
    if request.param == "local":
        return _local(tmp_path / "store", monkeypatch)
    return _s3(request.getfixturevalue("s3_url"), tmp_path)


@pytest.fixture
def storage(backend: Backend) -> Storage:
    return backend.storage


# --- whole objects ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data", [b"", b"hello", os.urandom(3 * 1024 * 1024)], ids=["empty", "small", "3MB"]
)
async def test_what_is_written_is_read_back_byte_for_byte(storage: Storage, data: bytes) -> None:
    """An object reads back exactly as written: empty, a few bytes, a few MB."""
    await storage.write("scenarios/demo/file.bin", data)
    assert data == await storage.read("scenarios/demo/file.bin")


async def test_reading_a_missing_object_is_object_not_found(storage: Storage) -> None:
    """A missing object is an `ObjectNotFoundError` naming it, not empty bytes."""
    await storage.write("scenarios/demo/here.md", b"x")
    for missing in ("scenarios/demo/absent.md", "scenarios/other/here.md", "scenarios/demo"):
        with pytest.raises(ObjectNotFoundError) as caught:
            await storage.read(missing)
        assert missing == caught.value.path


async def test_a_write_replaces_the_object(storage: Storage) -> None:
    """A second write to the same path replaces the first, longer or shorter."""
    await storage.write("a.txt", b"first, and longer")
    await storage.write("a.txt", b"second")
    assert (b"second", ObjectInfo("a.txt", 6)) == (
        await storage.read("a.txt"),
        await storage.stat("a.txt"),
    )


async def test_a_reader_sees_the_old_object_while_a_write_is_midway(backend: Backend) -> None:
    """While half of a new object is sent, readers get the old one whole; then the new."""
    await backend.storage.write("design.md", OLD)
    async with backend.midway(False) as (writer, midway), anyio.create_task_group() as tasks:
        tasks.start_soon(writer.write, "design.md", NEW)
        await midway.reached()
        during = await backend.storage.read("design.md")
        midway.release()
    assert (OLD, NEW) == (during, await backend.storage.read("design.md"))


async def test_a_write_that_fails_midway_leaves_the_old_object(backend: Backend) -> None:
    """A write cut off halfway raises, and the old object stays, alone and whole."""
    await backend.storage.write("design.md", OLD)
    async with backend.midway(True) as (writer, _):
        with pytest.raises(BatonError):
            await writer.write("design.md", NEW)
    listing = await backend.storage.list()
    assert (OLD, (ObjectInfo("design.md", len(OLD)),)) == (
        await backend.storage.read("design.md"),
        listing.objects,
    )


async def test_a_write_cancelled_midway_ends_whole(backend: Backend) -> None:
    """A write whose caller is cancelled halfway runs to its end: the new object, whole."""
    await backend.storage.write("design.md", OLD)
    scope = anyio.CancelScope()

    async def write(writer: Storage) -> None:
        with scope:
            await writer.write("design.md", NEW)

    async with backend.midway(False) as (writer, midway), anyio.create_task_group() as tasks:
        tasks.start_soon(write, writer)
        await midway.reached()
        scope.cancel()
        midway.release()
    listing = await backend.storage.list()
    assert (NEW, (ObjectInfo("design.md", len(NEW)),)) == (
        await backend.storage.read("design.md"),
        listing.objects,
    )


# --- listing ---------------------------------------------------------------------------------

TREE = {
    "scenarios/demo/design.md": b"design",
    "scenarios/demo/execute/report.json": b"{}",
    "scenarios/demo/execute/deep/trace.txt": b"trace!",
    "scenarios/demo/inputs/brief.md": b"",
    "scenarios/demo2/other.md": b"other",
    "top.txt": b"top",
}


async def _fill(storage: Storage) -> None:
    for path, data in TREE.items():
        await storage.write(path, data)


async def test_a_recursive_listing_names_every_object_below_sorted(storage: Storage) -> None:
    """A recursive listing names every object below the folder, from it, sorted, with sizes."""
    await _fill(storage)
    expected = Listing(
        (
            ObjectInfo("design.md", 6),
            ObjectInfo("execute/deep/trace.txt", 6),
            ObjectInfo("execute/report.json", 2),
            ObjectInfo("inputs/brief.md", 0),
        )
    )
    assert (expected, expected) == (
        await storage.list("scenarios/demo"),
        await storage.list("scenarios/demo/"),
    )


async def test_a_one_level_listing_names_objects_and_folders(storage: Storage) -> None:
    """Listing one level gives the objects directly in the folder and its sub-folders."""
    await _fill(storage)
    expected = Listing((ObjectInfo("design.md", 6),), ("execute", "inputs"))
    assert expected == await storage.list("scenarios/demo", recursive=False)


async def test_listing_the_root_names_everything(storage: Storage) -> None:
    """The root lists every object by its full path, and one level its top folders."""
    await _fill(storage)
    everything = await storage.list()
    top = await storage.list("", recursive=False)
    assert (sorted(TREE), 6 + 2 + 6 + 0 + 5 + 3) == (
        [item.path for item in everything.objects],
        everything.size,
    )
    assert Listing((ObjectInfo("top.txt", 3),), ("scenarios",)) == top


async def test_a_prefix_is_a_whole_folder_name(storage: Storage) -> None:
    """`scenarios/demo` lists nothing of `scenarios/demo2`: a prefix is a whole folder name."""
    await _fill(storage)
    listing = await storage.list("scenarios/demo2")
    assert Listing((ObjectInfo("other.md", 5),)) == listing


async def test_listing_a_missing_folder_is_empty(storage: Storage) -> None:
    """A folder that holds nothing lists empty, recursively or not."""
    await _fill(storage)
    assert (Listing(), Listing()) == (
        await storage.list("scenarios/none"),
        await storage.list("scenarios/none", recursive=False),
    )


# --- stat, exists, delete --------------------------------------------------------------------


async def test_stat_and_exists_know_objects_from_folders_and_absence(storage: Storage) -> None:
    """`stat` gives an object's size; a folder or a missing path is no object."""
    await _fill(storage)
    found = [
        (await storage.stat(path), await storage.exists(path))
        for path in ("scenarios/demo/design.md", "scenarios/demo", "scenarios/demo/nope.md")
    ]
    assert [(ObjectInfo("scenarios/demo/design.md", 6), True), (None, False), (None, False)] == (
        found
    )


async def test_delete_removes_the_object_and_nothing_else(storage: Storage) -> None:
    """A deleted object is gone (read, stat, listing); its neighbours stay."""
    await _fill(storage)
    await storage.delete("scenarios/demo/execute/report.json")
    with pytest.raises(ObjectNotFoundError):
        await storage.read("scenarios/demo/execute/report.json")
    listing = await storage.list("scenarios/demo/execute")
    assert (False, Listing((ObjectInfo("deep/trace.txt", 6),))) == (
        await storage.exists("scenarios/demo/execute/report.json"),
        listing,
    )


async def test_deleting_a_missing_object_is_no_error(storage: Storage) -> None:
    """Deleting what is not there (a missing object, a folder) does nothing."""
    await _fill(storage)
    await storage.delete("scenarios/demo/absent.md")
    await storage.delete("scenarios/demo/execute")
    assert sorted(TREE) == [item.path for item in (await storage.list()).objects]


# --- paths -----------------------------------------------------------------------------------

BAD_PATHS = [
    ("", "is empty"),
    ("/etc/passwd", "is absolute"),
    ("scenarios/../../x", "contains '..'"),
    ("..", "contains '..'"),
    ("a//b", "empty or '.' part"),
    ("a/./b", "empty or '.' part"),
    ("a/b/", "empty or '.' part"),
    ("a\0b", "control character"),
    ("a\tb", "control character"),
    ("a\\b", "backslash"),
    ("x" * 256, "over 255 bytes"),
]


@pytest.mark.parametrize(("path", "says"), BAD_PATHS, ids=[repr(p[:12]) for p, _ in BAD_PATHS])
async def test_a_malformed_path_is_refused_by_every_method(
    storage: Storage, path: str, says: str
) -> None:
    """Every method refuses a malformed path with a `StoragePathError` saying why."""
    calls = [
        storage.read(path),
        storage.write(path, b"x"),
        storage.stat(path),
        storage.exists(path),
        storage.delete(path),
    ]
    refusals = []
    for call in calls:
        with pytest.raises(StoragePathError) as caught:
            await call
        refusals.append(says in str(caught.value))
    assert ([True] * 5, Listing()) == (refusals, await storage.list())


async def test_a_malformed_prefix_is_refused(storage: Storage) -> None:
    """A listing's prefix follows the same rules (a trailing `/` aside)."""
    with pytest.raises(StoragePathError, match=r"contains '\.\.'"):
        await storage.list("scenarios/../..")


UNICODE = {
    "scenarios/café/résumé.md": "résumé".encode(),
    "scenarios/café/日本語 ファイル.txt": "内容".encode(),
    "scenarios/café/emoji 😀/a+b=c&d #1 100%.md": b"odd but legal",
}


async def test_unicode_and_punctuation_names_round_trip(storage: Storage) -> None:
    """Accents, CJK, emoji, spaces and URL punctuation are written, listed and read back."""
    for path, data in UNICODE.items():
        await storage.write(path, data)
    listing = await storage.list("scenarios/café")
    assert (
        sorted(path.removeprefix("scenarios/café/") for path in UNICODE),
        list(UNICODE.values()),
    ) == (
        [item.path for item in listing.objects],
        [await storage.read(path) for path in UNICODE],
    )


async def test_a_reachable_store_passes_its_check(storage: Storage) -> None:
    """`check` returns for a store that can be used."""
    await storage.write("x", b"1")
    assert None is await storage.check()  # type: ignore[func-returns-value]
