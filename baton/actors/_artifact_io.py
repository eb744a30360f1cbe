"""Atomic file writes: a reader sees the old file or the new one, never half of either."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import aiofiles
import anyio

from baton._private import private_dir, private_opener

TEMP_SUFFIX = ".tmp"


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
    temp = directory / f".{path.name}.{secrets.token_hex(6)}{TEMP_SUFFIX}"
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
