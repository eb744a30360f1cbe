"""Reading a file that something else may have planted: only a regular file with one link,
opened without blocking and checked again once open (docs/handoffs.md, "Sandbox").

A FIFO's open blocks until a writer comes, which would hold a worker thread (and, six of
them, every file I/O of the process); a device reads for ever; a second hard link can bring
a file from outside the workspace in. So a path is judged by its `stat` before it is
opened, and what was opened must be that same file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_KINDS = {
    stat.S_IFIFO: "named pipe",
    stat.S_IFSOCK: "socket",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
}


def stat_or_none(path: Path) -> os.stat_result | None:
    """The file's `stat`, or None when there is no such file."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


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


def read_checked(path: Path, expected: os.stat_result, limit: int) -> bytes | None:
    """The file's bytes (at most `limit` + 1 of them, so a caller can tell it grew past its
    limit), or None when what got opened is not the file `expected` describes.

    O_NONBLOCK makes the open of a pipe swapped in since the check return at once instead of
    waiting for a writer; the check after opening then refuses it.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    with open(fd, "rb", closefd=True) as handle:
        opened = os.fstat(fd)
        same = (opened.st_dev, opened.st_ino) == (expected.st_dev, expected.st_ino)
        if not same or refusal("", opened) is not None:
            return None
        return handle.read(limit + 1)


def read_regular(path: Path, shown: str, limit: int) -> bytes:
    """The bytes of the regular file at `path` (blocking: run it off the event loop);
    `FileNotFoundError`, or `ValueError` saying why it is refused (`shown` names it)."""
    info = stat_or_none(path)
    if info is None:
        raise FileNotFoundError(path)
    why = refusal(shown, info)
    if why is not None:
        raise ValueError(why)
    if info.st_size > limit:
        raise ValueError(f"{shown} is {info.st_size} bytes, over the {limit} byte limit")
    data = read_checked(path, info, limit)
    if data is None or len(data) > limit:
        raise ValueError(f"{shown} changed while it was read; try again")
    return data
