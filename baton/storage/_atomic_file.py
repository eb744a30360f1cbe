"""Atomic file writes: a reader sees the old file or the new one, never half of either.

The local store's whole-or-absent writes (docs/storage.md, "Whole or absent"), and the
agents' and the pipeline's files (`baton.agents._artifact_io` names these functions for
them): it sits in the storage layer, below every one of them (docs/architecture.md,
"storage/")."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import time
from pathlib import Path

import anyio

from baton._private import FILE_MODE, private_dir

TEMP_SUFFIX = ".tmp"
_TOKEN_HEX = 6  # bytes of randomness in a temp file's name
_LEFTOVER = re.compile(rf"^\..+\.[0-9a-f]{{{2 * _TOKEN_HEX}}}{re.escape(TEMP_SUFFIX)}$")
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_FILE_MODE = 0o666  # narrowed by the umask, as `open()` does
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


def temp_name(name: str) -> str:
    """The name of a `write_atomic` temp file for `name` (`is_write_leftover` knows it): a
    leading dot keeps it out of casual listings, random hex keeps two writers apart."""
    return f".{name}.{secrets.token_hex(_TOKEN_HEX)}{TEMP_SUFFIX}"


def write_at(directory: int, name: str, data: bytes, *, private: bool = False) -> None:
    """Replace `name` in the directory open as `directory` with `data`, durably (blocking).

    The temp file is created beside it with O_EXCL and O_NOFOLLOW and renamed over `name`
    relative to the same descriptor, so the write lands in that directory whatever its path
    now leads to (docs/handoffs.md, "Sandbox"); then the directory is fsynced, because the
    rename lives in its entry. On any failure the temp file is removed and `name` keeps its
    previous content (or stays absent).
    """
    temp = temp_name(name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC
    fd = os.open(temp, flags, FILE_MODE if private else _FILE_MODE, dir_fd=directory)
    try:
        try:
            if private:
                os.fchmod(fd, FILE_MODE)  # the umask may have taken the owner's bits away
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temp, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=directory)
        raise
    os.fsync(directory)


def _write_in(directory: Path, name: str, data: bytes, private: bool) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        write_at(fd, name, data, private=private)
    finally:
        os.close(fd)


async def write_atomic(path: Path, data: bytes, *, private: bool = False) -> None:
    """Replace `path` with `data` durably: temp file in the same directory, fsync, rename.

    Parent directories are created. `private`: baton's own state, so the directories created
    are 0700 and the file 0600 (README, "Sandbox and file modes"). The write runs whole on a
    worker thread: a failure removes the temp file and `path` keeps its previous content (or
    stays absent), and a cancelled caller leaves it either whole or untouched, never half.
    """
    directory = path.parent
    if private:
        await anyio.to_thread.run_sync(private_dir, directory)
    else:
        await anyio.Path(directory).mkdir(parents=True, exist_ok=True)
    await anyio.to_thread.run_sync(_write_in, directory, path.name, data, private)
