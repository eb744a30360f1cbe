"""Walking a path inside a directory tree through directory descriptors, so that what is
checked is what is used (docs/handoffs.md, "Sandbox").

Resolving a path (`os.path.realpath`), checking where it lands, then opening it by name walks
the file system twice: any other process on the machine can swap a folder for a symbolic
link to elsewhere between the two, and the open follows it. Here the check is the open. From
a descriptor of the root, every component is opened with `O_DIRECTORY | O_NOFOLLOW` relative
to the descriptor of the one before; a symbolic link met on the way is read (`readlink`) and
its target spliced into the components still to walk, so a link is followed only as far as
the walk itself can see it stays under the root, and the components the walk traversed are
the path it reached. The caller then opens, creates, renames or lists relative to the last
descriptor, which stays the directory that was checked whatever its names point to later.

Blocking throughout: run it on a worker thread.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from baton.agents.errors import SandboxViolationError

MAX_HOPS = 40
"""Symbolic links followed in one walk before it gives up (Linux's own limit)."""
LINK_LEADS_OUTSIDE = "a symbolic link on this path leads outside the workspace"
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# O_NONBLOCK: a named pipe where a directory was expected must fail at once, never wait.
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
# Not a directory, or a link O_NOFOLLOW would not open (platforms differ on which errno).
_NOT_ENTERED = {errno.ELOOP, errno.ENOTDIR, errno.EMLINK}


def inside(path: PurePosixPath, roots: Iterable[PurePosixPath]) -> tuple[str, ...] | None:
    """The components of absolute `path` below the first of `roots` it lies under, or None."""
    for root in roots:
        if path.parts[: len(root.parts)] == root.parts:
            return path.parts[len(root.parts) :]
    return None


@dataclass
class Walk:
    """Where a walk stopped: directories held open from the root down, and the components
    below the last one it did not enter. Close it, or use it in a `with`."""

    dirs: list[int]
    """Open descriptors: the root's, then each directory entered."""
    parts: list[str] = field(default_factory=list)
    """The names of `dirs[1:]`: the path reached, relative to the root, links resolved."""
    rest: list[str] = field(default_factory=list)
    """Components below `dirs[-1]` not entered: none when the path is that directory; one
    when it names something other than a directory (or nothing) there; more when a
    directory on the way is missing (or is not a directory)."""

    @property
    def fd(self) -> int:
        """The descriptor of the deepest directory entered."""
        return self.dirs[-1]

    @property
    def resolved(self) -> tuple[str, ...]:
        """The path relative to the root as the walk resolved it, missing components included."""
        return (*self.parts, *self.rest)

    def final(self) -> os.stat_result | None:
        """The `lstat` of what the path names (None: nothing there). Never follows a link."""
        if not self.rest:
            return os.fstat(self.fd)
        if len(self.rest) > 1:
            return None
        try:
            return os.stat(self.rest[0], dir_fd=self.fd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def is_directory(self) -> bool:
        """Whether the path names a directory (it was entered, or became one since)."""
        info = self.final()
        return info is not None and stat.S_ISDIR(info.st_mode)

    def enter_missing(self) -> tuple[int, str]:
        """Create and enter the missing directories on the way; return the descriptor of
        the directory that holds the final name, and that name.

        Each is made with `mkdir` relative to its parent and opened with O_NOFOLLOW, so one
        swapped for a link after it was made is refused (an `OSError`), never followed.
        """
        if not self.rest:
            raise IsADirectoryError(errno.EISDIR, "is a directory", "/".join(self.parts))
        for name in self.rest[:-1]:
            if name == "..":
                # Only a link target can put one after a missing folder: it names nothing.
                raise FileNotFoundError(errno.ENOENT, "no such directory", "/".join(self.parts))
            # One made meanwhile by another writer is entered like any other.
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, dir_fd=self.fd)
            self.dirs.append(os.open(name, DIR_FLAGS, dir_fd=self.fd))
            self.parts.append(name)
        self.rest = self.rest[-1:]
        return self.fd, self.rest[0]

    def close(self) -> None:
        """Close every descriptor the walk holds."""
        while self.dirs:
            os.close(self.dirs.pop())

    def __enter__(self) -> Walk:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def walk(
    root: Path, components: Sequence[str], spelled: str, *, aliases: Sequence[PurePosixPath] = ()
) -> Walk:
    """Walk `components` down from the directory `root` (already resolved: the operator's,
    not a model's); raise `SandboxViolationError` naming `spelled` when a link leads out.

    A link is followed when its target stays under the root: a relative target from the
    directory holding it, an absolute one only when it lies under `root` or one of `aliases`
    (other spellings of the root), `..` going up the directories entered but never above the
    root. The walk stops at the first component that is missing or not a directory; a link
    in that place is followed first, so `rest` never starts with a link the walk saw.
    """
    here = Walk([os.open(root, DIR_FLAGS & ~os.O_NOFOLLOW)])
    roots = (PurePosixPath(root), *aliases)
    pending = deque(components)
    hops = 0
    try:
        while pending:
            name = pending.popleft()
            if name in ("", "."):
                continue
            if name == "..":
                if len(here.dirs) == 1:
                    reason = LINK_LEADS_OUTSIDE if hops else "'..' leads outside the workspace"
                    raise SandboxViolationError(spelled, reason)
                os.close(here.dirs.pop())
                here.parts.pop()
                continue
            try:
                here.dirs.append(os.open(name, DIR_FLAGS, dir_fd=here.fd))
                here.parts.append(name)
                continue
            except FileNotFoundError:
                target = None
            except OSError as error:
                if error.errno not in _NOT_ENTERED:
                    raise
                target = _link_target(name, here.fd)
            if target is None:
                here.rest = [name, *(c for c in pending if c not in ("", "."))]
                return here
            hops += 1
            if hops > MAX_HOPS:
                raise SandboxViolationError(
                    spelled, f"more than {MAX_HOPS} symbolic links on this path (a loop?)"
                )
            if target.is_absolute():
                below = inside(target, roots)
                if below is None:
                    raise SandboxViolationError(spelled, LINK_LEADS_OUTSIDE)
                while len(here.dirs) > 1:
                    os.close(here.dirs.pop())
                here.parts.clear()
                pending.extendleft(reversed(below))
            else:
                pending.extendleft(reversed(target.parts))
        return here
    except BaseException:
        here.close()
        raise


def _link_target(name: str, directory: int) -> PurePosixPath | None:
    # None: `name` is not a link (a file, a pipe...) or is gone; either way the walk stops.
    try:
        return PurePosixPath(os.readlink(name, dir_fd=directory))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        if error.errno == errno.EINVAL:
            return None
        raise
