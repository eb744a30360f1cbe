"""Atomic file writes: a reader sees the old file or the new one, never half of either."""

from __future__ import annotations

import os
import re
import secrets
import time
from pathlib import Path

import aiofiles
import anyio

from baton._private import private_dir, private_opener

TEMP_SUFFIX = ".tmp"
_TOKEN_HEX = 6  # bytes of randomness in a temp file's name
_LEFTOVER = re.compile(rf"^\..+\.[0-9a-f]{{{2 * _TOKEN_HEX}}}{re.escape(TEMP_SUFFIX)}$")
LEFTOVER_AGE_S = 600.0
"""A write's temp file older than this is a leftover of a killed process, never one in
progress (a write takes milliseconds), even with other processes on the same workspace."""


def is_write_leftover(name: str) -> bool:
    """Whether `name` is the temp file of a `write_atomic`: only a process killed between
    writing and renaming leaves one behind, and it is no one's artifact."""
    return _LEFTOVER.match(name) is not None


def remove_write_leftovers(root: Path, *, older_than: float = LEFTOVER_AGE_S) -> int:
    """Delete the write leftovers under `root` older than `older_than` seconds; how many
    (blocking: run it on a worker thread)."""
    removed = 0
    now = time.time()
    for directory, _, files in os.walk(root):
        for name in files:
            if not is_write_leftover(name):
                continue
            path = Path(directory, name)
            try:
                if now - path.lstat().st_mtime > older_than:
                    path.unlink()
                    removed += 1
            except OSError:
                continue  # gone meanwhile, or not ours to remove: left as it is
    return removed


def _fsync_directory(directory: Path) -> None:
    # The rename lives in the directory entry: without this fsync a crash can undo it.
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


async def write_atomic(path: Path, data: bytes, *, private: bool = False) -> None:
    """Replace `path` with `data` durably: temp file in the same directory, fsync, rename.

    Parent directories are created. `private`: baton's own state, so the directories created
    are 0700 and the file 0600 (README, "Sandbox and file modes"). On any failure,
    cancellation included, the temp file is removed and `path` keeps its previous content
    (or stays absent).
    """
    directory = path.parent
    if private:
        await anyio.to_thread.run_sync(private_dir, directory)
    else:
        await anyio.Path(directory).mkdir(parents=True, exist_ok=True)
    # Same directory, so os.replace is a rename on one filesystem; the leading dot keeps
    # the half-written file out of casual listings.
    temp = directory / f".{path.name}.{secrets.token_hex(_TOKEN_HEX)}{TEMP_SUFFIX}"
    try:
        opener = private_opener if private else None
        async with aiofiles.open(temp, "xb", opener=opener) as handle:
            await handle.write(data)
            await handle.flush()
            await anyio.to_thread.run_sync(os.fsync, handle.fileno())
        await anyio.Path(temp).replace(path)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await anyio.Path(temp).unlink(missing_ok=True)
        raise
    await anyio.to_thread.run_sync(_fsync_directory, directory)
