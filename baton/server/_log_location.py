"""Where `baton tail` and `baton report` read the token log, checked before they read it
(README.md, "Running baton"): a file where the log's folder belongs would read as "no token
log yet", and a named pipe where the log belongs would block the reader for ever.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from baton.errors import StateFileError
from baton.runtime.log_files import TOKEN_LOG

_KINDS = {
    stat.S_IFREG: "a file",
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a named pipe",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}
_FOLDERS = {TOKEN_LOG.parent.parent: "baton's state folder", TOKEN_LOG.parent: "the log folder"}


def _kind(path: Path) -> int | None:
    try:
        return stat.S_IFMT(os.stat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return None


def checked_token_log(workspace: Path) -> Path:
    """The path of the workspace's token log (which may not exist yet); `StateFileError`
    naming the path when a folder on the way to it is not a folder, or the log is not a
    regular file. Blocks: it looks at the disk."""
    for folder, what in _FOLDERS.items():
        found = _kind(workspace / folder)
        if found is not None and found != stat.S_IFDIR:
            raise StateFileError(
                workspace / folder,
                f"is {_KINDS.get(found, 'a special file')}, not {what}",
                "move it aside; `baton run` makes the folder and writes the token log there",
            )
    path = workspace / TOKEN_LOG
    found = _kind(path)
    if found is not None and found != stat.S_IFREG:
        raise StateFileError(
            path, f"is {_KINDS.get(found, 'a special file')}, not the token log", "move it aside"
        )
    return path
