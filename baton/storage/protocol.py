"""The `Storage` protocol: what the workspace's files need from wherever they are kept, a
local folder or an S3-compatible bucket (docs/storage.md, "The interface").

Whole objects only, addressed by relative `/`-separated keys (`baton.storage.keys`): read
one, write one whole or not at all, list a folder, stat, delete. Every method is async and
never blocks the event loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    """One stored object: its key (relative to the folder listed) and its size in bytes."""

    path: str
    size: int


@dataclass(frozen=True, slots=True)
class Listing:
    """What a folder holds, each sorted by name: its objects, and, listed one level only,
    the folders directly below it that hold any object (a recursive listing has none: their
    objects are among `objects`, named from the listed folder)."""

    objects: tuple[ObjectInfo, ...] = ()
    folders: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        """The bytes of every object listed."""
        return sum(item.size for item in self.objects)


@runtime_checkable
class Storage(Protocol):
    """Objects under one root: a folder (`LocalStorage`) or a bucket's prefix
    (`ObjectStorage`). Paths are keys relative to that root; a malformed one is refused with
    `StoragePathError` before anything is touched."""

    @property
    def url(self) -> str:
        """Where the objects are, for messages: the folder's path or `s3://BUCKET/PREFIX`."""
        ...

    async def read(self, path: str) -> bytes:
        """The whole object at `path`; `ObjectNotFoundError` when there is none."""
        ...

    async def write(self, path: str, data: bytes) -> None:
        """Store `data` at `path`, replacing what was there, whole or not at all: a reader
        sees the old object or the new one, and a write that fails or is cancelled leaves
        the old one (or none)."""
        ...

    async def list(self, prefix: str = "", *, recursive: bool = True) -> Listing:
        """The objects in the folder `prefix` (`""`: the root): all of them below it, or,
        `recursive=False`, those directly in it and its sub-folders. Names are relative to
        `prefix`; a folder that holds nothing lists empty."""
        ...

    async def stat(self, path: str) -> ObjectInfo | None:
        """The object at `path` (its `path` as given), or None when there is none."""
        ...

    async def exists(self, path: str) -> bool:
        """Whether an object is stored at `path` (a folder is not one)."""
        ...

    async def delete(self, path: str) -> None:
        """Remove the object at `path`; nothing happens when there is none."""
        ...

    async def check(self) -> None:
        """Return once the store answers; `StorageFailure` saying what to check otherwise."""
        ...
