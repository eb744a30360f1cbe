"""The file tools' side of a remote store: the scenario files kept as objects in an
S3-compatible bucket rather than in the workspace folder (docs/handoffs.md, "In a remote
store").

A path is judged by the sandbox's rules that need no file system (`Sandbox.key`, and
`Sandbox.key_for_write` for a write), with the same refusals and messages as in the folder,
and names the object under the same relative key. A store has no links, no descriptors and
no folders: a "directory" is a key some object lies under, and a write is one whole PUT, so a
reader sees the old object or the new one and a refused write leaves nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from baton.agents.errors import SandboxViolationError
from baton.agents.tools._sandbox import Sandbox
from baton.storage.errors import ObjectNotFoundError, StoragePathError
from baton.storage.keys import check_key, join_key
from baton.storage.local import remote_store
from baton.storage.protocol import Listing, Storage


def stored_files(sandbox: Sandbox, storage: Storage | None) -> StoredFiles | None:
    """The remote store's files under `sandbox`'s rules, or None when the files are the
    workspace folder (no store, or a `LocalStorage`): the tools then walk it as they always
    have (docs/handoffs.md, "Sandbox")."""
    remote = remote_store(storage)
    return None if remote is None else StoredFiles(sandbox, remote)


@dataclass(frozen=True)
class StoredFiles:
    """The objects of one store, as the file tools and the handoff tools see them."""

    sandbox: Sandbox
    storage: Storage

    def key(self, path: str, *, for_write: bool = False) -> tuple[str, str]:
        """`path` as shown to the model and as a key (`""`: the root); `SandboxViolationError`
        when the sandbox refuses it or no object could have that key."""
        judge = self.sandbox.key_for_write if for_write else self.sandbox.key
        shown = self.sandbox.shown(judge(path))
        if shown == ".":
            return shown, ""
        try:
            return shown, check_key(shown)
        except StoragePathError as error:
            reason = f"no stored file can have this path: it {error.problem}"
            raise SandboxViolationError(path, reason) from None

    async def is_folder(self, key: str) -> bool:
        """Whether some object lies under `key` (the root always is one)."""
        if not key:
            return True
        listing = await self.storage.list(key, recursive=False)
        return bool(listing.objects or listing.folders)

    async def exists(self, key: str) -> bool:
        """Whether `key` names an object or a folder."""
        if not key:
            return True
        return await self.storage.exists(key) or await self.is_folder(key)

    async def read(self, key: str, shown: str, limit: int) -> bytes | None:
        """The object at `key`, or None when there is none; `ValueError` saying why when it
        is over `limit` bytes."""
        info = await self.storage.stat(key)
        if info is None:
            return None
        if info.size > limit:
            raise ValueError(f"{shown} is {info.size} bytes, over the {limit} byte limit")
        try:
            return await self.storage.read(key)
        except ObjectNotFoundError:
            return None  # deleted since the stat

    async def write(self, key: str, data: bytes) -> None:
        """Store `data` at `key` whole: one PUT."""
        await self.storage.write(key, data)

    async def entries(self, key: str, *, recursive: bool, cap: int) -> tuple[list[str], bool]:
        """`List`'s lines for the folder `key` (sorted by name, a folder's entries after it
        when `recursive`), and False when more than `cap` were there."""
        listing = await self.storage.list(key, recursive=recursive)
        tree = _Folder.of(listing)
        if not key:
            # The runtime's own folders are not listed, as in the workspace.
            for name in self.sandbox.reserved:
                tree.folders.pop(name, None)
        out: list[str] = []
        return out, tree.emit(out, "", cap)


@dataclass
class _Folder:
    """A folder rebuilt from a listing's keys: its objects' sizes and its sub-folders."""

    files: dict[str, int] = field(default_factory=dict)
    folders: dict[str, _Folder] = field(default_factory=dict)

    @classmethod
    def of(cls, listing: Listing) -> _Folder:
        root = cls()
        for name in listing.folders:
            root.folders[name] = cls()
        for item in listing.objects:
            *parents, name = item.path.split("/")
            here = root
            for parent in parents:
                here = here.folders.setdefault(parent, cls())
            here.files[name] = item.size
        return root

    def emit(self, out: list[str], prefix: str, cap: int) -> bool:
        """Add this folder's entries below `prefix` to `out`; False once at `cap`."""
        for name in sorted(self.files.keys() | self.folders.keys()):
            shown = join_key(prefix, name)
            if name in self.files:
                if len(out) >= cap:
                    return False
                out.append(f"{shown}  ({self.files[name]} bytes)")
            if name in self.folders:
                if len(out) >= cap:
                    return False
                out.append(f"{shown}/")
                if not self.folders[name].emit(out, shown, cap):
                    return False
        return True
