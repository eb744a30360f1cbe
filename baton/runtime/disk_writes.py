"""Appends that are whole or absent, and how long to wait for disk space.

A line-oriented file (the token log, a journal) read back after a failed append must not
find half a line followed by the next append's whole one: the reader would take the torn
line for damage in the middle of the file. So an append that fails truncates back what it
wrote. One that failed for space (ENOSPC, EDQUOT) raises `DiskFullFailure` naming the file;
the caller waits (`DISK_FULL_RETRY`) and appends the same bytes again once there is room.
One that failed because the file may not grow (EFBIG: `ulimit -f`, or the filesystem's
largest file) raises `FileTooLargeFailure`, which no wait ends (README.md, "After a full
disk or a damaged file").
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from baton.errors import write_failure
from baton.runtime.backoff import Backoff

# Soon at first (a log rotated elsewhere may free room at once), then every half minute.
DISK_FULL_RETRY = Backoff(initial=0.25, maximum=30.0)


def append_whole(fd: int, data: bytes, path: Path | str, *, sync: bool = False) -> None:
    """Append `data` to the file open at `fd` entirely (and with `sync` on disk), or leave
    the file as it was. Blocks: call it from a worker thread."""
    start = os.lseek(fd, 0, os.SEEK_END)
    view = memoryview(data)
    written = 0
    try:
        while written < len(data):
            written += os.write(fd, view[written:])
        if sync:
            os.fsync(fd)
    except OSError as exc:
        if written:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
        failure = write_failure(path, exc)
        if failure is not None:
            raise failure from exc
        raise
