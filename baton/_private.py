"""Private state: what baton keeps under `.baton/` is readable by its user only.

Directories are 0700 and files 0600 whatever the process umask. The mode is given when the
file or directory is created (so it is never more open than that, not even for an instant)
and set again right after, because the umask may have taken the owner's own bits away; a file
or directory left by an older baton with a wider mode is narrowed when it is next opened. The
umask itself is never changed: it is process-wide, and a library must not touch it.
(README, "Sandbox and file modes".)
"""

from __future__ import annotations

import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
STATE_DIR = ".baton"


def private_dir(path: Path) -> Path:
    """Create `path` and any missing parents with mode 0700.

    Existing directories are narrowed to 0700 only from `path` up to the `.baton/` it lies
    in (if any): a folder of the caller's own (where a token log is written elsewhere, say)
    keeps its mode.
    """
    missing: list[Path] = []
    for directory in (path, *path.parents):
        if directory.is_dir():
            break
        missing.append(directory)
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            if not directory.is_dir():
                raise
            continue  # made meanwhile by another task
        os.chmod(directory, DIR_MODE)
    if STATE_DIR in path.parts:
        for directory in (path, *path.parents):
            os.chmod(directory, DIR_MODE)
            if directory.name == STATE_DIR:
                break
    return path


def private_opener(path: str | os.PathLike[str], flags: int) -> int:
    """An `opener` for `open()` (and `aiofiles.open`): the file is created 0600 and kept so."""
    fd = os.open(path, flags, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def private_file(path: Path) -> Path:
    """Create `path` empty with mode 0600 if it does not exist; make it 0600 if it does.

    For files another library creates (SQLite's database: its `-wal` and `-shm` files take
    the database's mode when SQLite creates them)."""
    os.close(private_opener(path, os.O_RDONLY | os.O_CREAT))
    return path
