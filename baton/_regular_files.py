"""Reading a file that something else may have planted: only a regular file with one link,
opened without blocking and checked again once open (docs/handoffs.md, "Sandbox").

A FIFO's open blocks until a writer comes, which would hold a worker thread (and, six of
them, every file I/O of the process); a device reads for ever; a second hard link can bring
a file from outside the workspace in. So a file is judged by its `lstat` before it is
opened, opened relative to its directory's descriptor with O_NONBLOCK and O_NOFOLLOW, and
what was opened must be that same file.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_KINDS = {
    stat.S_IFIFO: "named pipe",
    stat.S_IFSOCK: "socket",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
    stat.S_IFLNK: "symbolic link",
}
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def refusal(shown: str, info: os.stat_result) -> str | None:
    """Why Read will not open this file, judged from its `stat` alone, or None."""
    if not stat.S_ISREG(info.st_mode):
        kind = _KINDS.get(stat.S_IFMT(info.st_mode), "special file")
        return f"{shown} is not a regular file but a {kind}; only regular files are read"
    if info.st_nlink > 1:
        return (
            f"{shown} has {info.st_nlink} hard links; a file also linked "
            "from elsewhere (the other link may lie outside the workspace)"
        )
    return None


def read_at(directory: int, name: str, shown: str, limit: int) -> bytes:
    """The bytes of the regular file `name` in the directory open as `directory` (blocking:
    run it off the event loop); `FileNotFoundError`, `IsADirectoryError`, or `ValueError`
    saying why it is refused (`shown` names it). A link there is refused, not followed.

    O_NONBLOCK makes the open of a pipe swapped in since the `lstat` return at once instead
    of waiting for a writer; the check after opening then refuses it.
    """
    info = os.stat(name, dir_fd=directory, follow_symlinks=False)
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", shown)
    why = refusal(shown, info)
    if why is not None:
        raise ValueError(why)
    if info.st_size > limit:
        raise ValueError(f"{shown} is {info.st_size} bytes, over the {limit} byte limit")
    changed = ValueError(f"{shown} changed while it was read; try again")
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | _CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=directory)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.EMLINK):
            raise changed from None  # a link swapped in since the lstat
        raise
    with open(fd, "rb", closefd=True) as handle:
        opened = os.fstat(fd)
        same = (opened.st_dev, opened.st_ino) == (info.st_dev, info.st_ino)
        if not same or refusal(shown, opened) is not None:
            raise changed
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise changed
    return data


def read_regular(path: Path, shown: str, limit: int) -> bytes:
    """The bytes of the regular file at `path` (blocking: run it off the event loop);
    `FileNotFoundError`, or `ValueError` saying why it is refused (`shown` names it).

    The folders on the way are the caller's to trust; the file itself is opened relative to
    its folder's descriptor, as `read_at` does.
    """
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        return read_at(directory, path.name, shown, limit)
    except IsADirectoryError:
        raise ValueError(f"{shown} is a directory, not a file") from None
    finally:
        os.close(directory)
