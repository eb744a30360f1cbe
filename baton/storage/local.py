"""`LocalStorage`: objects as files under one folder, the embedded default (the workspace
itself: an object's key is its path from the workspace root; docs/storage.md, "Local").

Every call runs whole on a worker thread. A path is walked from a descriptor of the root,
one folder at a time with `O_NOFOLLOW`, and the file is opened, written or removed relative
to the last folder's descriptor, so a symbolic link swapped in anywhere on the way cannot
lead a read or a write out of the root (docs/handoffs.md, "Sandbox"): a link on a path a
caller names is refused, and a listing passes links over. Writes are atomic
(`baton.storage._atomic_file`): a temp file beside the target, fsync, rename.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path

import anyio

from baton._regular_files import refusal
from baton.errors import write_failure
from baton.storage._atomic_file import is_write_leftover, write_at
from baton.storage.errors import ObjectNotFoundError, StorageFailure
from baton.storage.keys import check_key, check_prefix, is_key, join_key
from baton.storage.protocol import Listing, ObjectInfo, Storage

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# O_NONBLOCK: a named pipe where a folder or a file was expected fails or is refused at
# once instead of waiting for a writer.
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
# A link O_NOFOLLOW would not open, or not a folder (platforms differ on which errno).
_NOT_ENTERED = {errno.ELOOP, errno.ENOTDIR, errno.EMLINK}


def _is_link(folder: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _entries(folder: int, below: str) -> Iterator[tuple[os.DirEntry[str], str]]:
    """The files and folders in `folder` that may hold objects, with their keys: links,
    write leftovers and names no key can spell are no objects."""
    with os.scandir(folder) as entries:
        for entry in entries:
            path = join_key(below, entry.name)
            if is_write_leftover(entry.name) or entry.is_symlink() or not is_key(path):
                continue
            if entry.is_file(follow_symlinks=False) or entry.is_dir(follow_symlinks=False):
                yield entry, path


@contextmanager
def _subfolder(folder: int, name: str) -> Iterator[int | None]:
    try:
        child = os.open(name, DIR_FLAGS, dir_fd=folder)
    except OSError:
        yield None  # gone, or swapped for a link, since it was listed
        return
    try:
        yield child
    finally:
        os.close(child)


def _scan(
    folder: int, below: str, recursive: bool, objects: list[ObjectInfo], folders: list[str]
) -> None:
    for entry, path in _entries(folder, below):
        if entry.is_file(follow_symlinks=False):
            objects.append(ObjectInfo(path, entry.stat(follow_symlinks=False).st_size))
            continue
        with _subfolder(folder, entry.name) as child:
            if child is None:
                continue
            if recursive:
                _scan(child, path, True, objects, folders)
            elif _holds_object(child, path):
                folders.append(entry.name)


def _holds_object(folder: int, below: str) -> bool:
    """Whether any object lies below `folder`: a bucket has no empty folders, so a folder
    lists only with an object somewhere in it."""
    for entry, path in _entries(folder, below):
        if entry.is_file(follow_symlinks=False):
            return True
        with _subfolder(folder, entry.name) as child:
            if child is not None and _holds_object(child, path):
                return True
    return False


class LocalStorage:
    """The objects under `root`, a folder (created by the first write if missing)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @property
    def url(self) -> str:
        return str(self.root)

    def __repr__(self) -> str:
        return f"LocalStorage({self.url!r})"

    # --- the protocol ------------------------------------------------------------------------

    async def read(self, path: str) -> bytes:
        check_key(path)
        return await anyio.to_thread.run_sync(self._read, path)

    async def write(self, path: str, data: bytes) -> None:
        check_key(path)
        await anyio.to_thread.run_sync(self._write, path, bytes(data))

    async def list(self, prefix: str = "", *, recursive: bool = True) -> Listing:
        folder = check_prefix(prefix)
        return await anyio.to_thread.run_sync(self._list, folder, recursive)

    async def stat(self, path: str) -> ObjectInfo | None:
        check_key(path)
        return await anyio.to_thread.run_sync(self._stat, path)

    async def exists(self, path: str) -> bool:
        return await self.stat(path) is not None

    async def delete(self, path: str) -> None:
        check_key(path)
        await anyio.to_thread.run_sync(self._delete, path)

    async def check(self) -> None:
        await anyio.to_thread.run_sync(self._check)

    # --- on a worker thread -------------------------------------------------------------------

    @contextmanager
    def _folder(self, parts: Sequence[str], shown: str, *, create: bool) -> Iterator[int | None]:
        """A descriptor of the folder `parts` below the root, or None when it is not there
        (nor, `create`, made); closed when the block ends."""
        with ExitStack() as held:
            if create:
                self.root.mkdir(parents=True, exist_ok=True)
            try:
                current = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
            except (FileNotFoundError, NotADirectoryError):
                yield None
                return
            held.callback(os.close, current)
            for name in parts:
                entered = self._enter(current, name, shown, create=create)
                if entered is None:
                    yield None
                    return
                held.callback(os.close, entered)
                current = entered
            yield current

    def _enter(self, parent: int, name: str, shown: str, *, create: bool) -> int | None:
        try:
            return os.open(name, DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            if not create:
                return None
        except OSError as error:
            if error.errno not in _NOT_ENTERED:
                raise
            if create or _is_link(parent, name):
                raise self._in_the_way(shown, name) from None
            return None  # a file where a folder would be: no object below it
        with suppress(FileExistsError):  # made meanwhile by another writer
            os.mkdir(name, dir_fd=parent)
        try:
            return os.open(name, DIR_FLAGS, dir_fd=parent)
        except OSError as error:
            if error.errno in _NOT_ENTERED:
                raise self._in_the_way(shown, name) from None
            raise

    def _in_the_way(self, shown: str, name: str) -> StorageFailure:
        return StorageFailure(
            f"{self.url}: {name!r} on the path {shown!r} is a symbolic link or a file, not a "
            "folder; local storage follows no links — move it aside"
        )

    def _read(self, path: str) -> bytes:
        parts = path.split("/")
        try:
            with self._folder(parts[:-1], path, create=False) as folder:
                if folder is None:
                    raise ObjectNotFoundError(path, self.url)
                return self._read_in(folder, parts[-1], path)
        except OSError as error:
            raise StorageFailure(
                f"cannot read {path!r} in {self.url}: {error.strerror or error}"
            ) from error

    def _read_in(self, folder: int, name: str, path: str) -> bytes:
        try:
            fd = os.open(name, FILE_FLAGS, dir_fd=folder)
        except FileNotFoundError:
            raise ObjectNotFoundError(path, self.url) from None
        except OSError as error:
            if error.errno in _NOT_ENTERED:
                raise StorageFailure(
                    f"{self.url}: {path!r} is a symbolic link; local storage follows none"
                ) from None
            raise
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise ObjectNotFoundError(path, self.url)  # a folder is not an object
            why = refusal(repr(path), info)
            if why is not None:
                raise StorageFailure(f"{self.url}: {why}")
        except BaseException:
            os.close(fd)
            raise
        with open(fd, "rb", closefd=True) as handle:
            return handle.read()

    def _write(self, path: str, data: bytes) -> None:
        parts = path.split("/")
        try:
            with self._folder(parts[:-1], path, create=True) as folder:
                assert folder is not None  # made when missing
                write_at(folder, parts[-1], data)
        except OSError as error:
            failure = write_failure(self.root / path, error)
            if failure is not None:
                raise failure from error
            raise StorageFailure(
                f"cannot write {path!r} in {self.url}: {error.strerror or error}"
            ) from error

    def _list(self, prefix: str, recursive: bool) -> Listing:
        objects: list[ObjectInfo] = []
        folders: list[str] = []
        parts = prefix.split("/") if prefix else []
        try:
            with self._folder(parts, prefix, create=False) as folder:
                if folder is not None:
                    _scan(folder, "", recursive, objects, folders)
        except OSError as error:
            raise StorageFailure(
                f"cannot list {prefix!r} in {self.url}: {error.strerror or error}"
            ) from error
        objects.sort(key=lambda item: item.path)
        return Listing(tuple(objects), tuple(sorted(folders)))

    def _stat(self, path: str) -> ObjectInfo | None:
        parts = path.split("/")
        try:
            with self._folder(parts[:-1], path, create=False) as folder:
                if folder is None or is_write_leftover(parts[-1]):
                    return None
                try:
                    info = os.stat(parts[-1], dir_fd=folder, follow_symlinks=False)
                except (FileNotFoundError, NotADirectoryError):
                    return None
        except OSError as error:
            raise StorageFailure(
                f"cannot look at {path!r} in {self.url}: {error.strerror or error}"
            ) from error
        return ObjectInfo(path, info.st_size) if stat.S_ISREG(info.st_mode) else None

    def _delete(self, path: str) -> None:
        parts = path.split("/")
        try:
            with self._folder(parts[:-1], path, create=False) as folder:
                if folder is None:
                    return
                try:
                    info = os.stat(parts[-1], dir_fd=folder, follow_symlinks=False)
                    if stat.S_ISREG(info.st_mode):  # a folder or a link is no object
                        os.unlink(parts[-1], dir_fd=folder)
                except FileNotFoundError:
                    return
        except OSError as error:
            raise StorageFailure(
                f"cannot delete {path!r} in {self.url}: {error.strerror or error}"
            ) from error

    def _check(self) -> None:
        try:
            info = os.stat(self.root)
        except OSError as error:
            raise StorageFailure(
                f"storage folder {self.url} cannot be used: {error.strerror or error} — "
                "check the workspace path"
            ) from None
        if not stat.S_ISDIR(info.st_mode):
            raise StorageFailure(f"storage folder {self.url} is not a folder — check the path")


def remote_store(storage: Storage | None) -> Storage | None:
    """`storage` when it is not the workspace folder (a bucket), else None: the workspace's
    files are then read and written as they always were (docs/storage.md, "What is stored
    where")."""
    return None if storage is None or isinstance(storage, LocalStorage) else storage
