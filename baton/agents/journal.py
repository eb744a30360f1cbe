"""Journals: the append-only record of an agent's conversation, so a restart resumes it.

A step counts as done only once its record is on disk (written, flushed, fsynced). Each
line carries a CRC-32 of its JSON so a line torn by a crash is recognised: a torn *last*
line is dropped (and cut off the file, so the next append starts clean); damage anywhere
else is reported, never silently skipped.
"""

from __future__ import annotations

import functools
import json
import os
import re
import zlib
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import aiofiles
import anyio

from baton._log import get_logger
from baton._private import private_dir, private_opener
from baton.agents.errors import JournalCorruptError
from baton.errors import UsageError
from baton.runtime.disk_writes import append_whole

log = get_logger(__name__)

JOURNAL_DIR = Path(".baton") / "journal"
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$")


class JournalStore(Protocol):
    """Where agent actors keep their conversation records.

    A `shared` store is written by several processes (workers scaling one actor out): an
    actor holds a conversation (`hold`) while it works on it, and checks `length` against
    what it has cached, since another process may have appended since it last looked.
    """

    @property
    def shared(self) -> bool:
        """Whether other processes append to these journals too."""
        ...

    def hold(self, actor: str, conversation: str) -> AbstractAsyncContextManager[None]:
        """Own the conversation for the block: no other holder appends to it meanwhile."""
        ...

    async def length(self, actor: str, conversation: str) -> int:
        """How many records the conversation has."""
        ...

    async def append(self, actor: str, conversation: str, record: Mapping[str, Any]) -> None:
        """Durably append one record; returns once it would survive a crash."""
        ...

    async def read(self, actor: str, conversation: str) -> list[dict[str, Any]]:
        """Every record of the conversation, in append order (empty if there is none)."""
        ...

    async def conversations(self, actor: str) -> list[str]:
        """The conversation ids the actor has records for."""
        ...

    def damaged(
        self, actor: str, conversation: str, line: int, problem: str
    ) -> JournalCorruptError:
        """The error reporting record `line` of the conversation's journal as damaged: where
        the journal is (a file, a key) and how to set it aside."""
        ...


def _check_name(kind: str, name: str) -> str:
    if not _SAFE_NAME.match(name):
        raise UsageError(
            f"invalid {kind} name {name!r} for a journal: "
            "use letters, digits, '_', '-', '.', ':', '@'"
        )
    return name


def encode_line(record: Mapping[str, Any]) -> bytes:
    """One journal line: the CRC-32 of the JSON in hex, a space, the JSON, a newline."""
    body = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()
    return b"%08x %s\n" % (zlib.crc32(body), body)


def decode_line(line: bytes) -> dict[str, Any] | None:
    """The record of a well-formed line, or None if it is torn or damaged."""
    record, _ = _decode(line)
    return record


def _decode(line: bytes) -> tuple[dict[str, Any] | None, str]:
    """The line's record, or None and what is wrong with the line."""
    if not line.endswith(b"\n"):
        return None, "the line has no end (cut short)"
    if len(line) < 10 or line[8:9] != b" ":
        return None, "the line does not start with a checksum and a space"
    body = line[9:-1]
    try:
        checksum = int(line[:8], 16)
    except ValueError:
        return None, "the line does not start with a checksum and a space"
    if checksum != zlib.crc32(body):
        return None, "the line's CRC-32 does not match its content (it was changed or cut)"
    try:
        record = json.loads(body)
    except ValueError:
        return None, "the line is not JSON"
    if not isinstance(record, dict):
        return None, "the line is not a JSON object"
    return record, ""


@asynccontextmanager
async def _sole_owner(actor: str, conversation: str) -> AsyncIterator[None]:
    # A store only this process writes needs no lease: the workspace claim is the ownership.
    yield


class FileJournalStore:
    """Journals as `<workspace>/.baton/journal/<actor>/<conversation>.jsonl`."""

    shared = False

    def __init__(self, workspace: Path) -> None:
        self.root = workspace / JOURNAL_DIR

    def hold(self, actor: str, conversation: str) -> AbstractAsyncContextManager[None]:
        return _sole_owner(actor, conversation)

    async def length(self, actor: str, conversation: str) -> int:
        return len(await self.read(actor, conversation))

    def path(self, actor: str, conversation: str) -> Path:
        return (
            self.root
            / _check_name("actor", actor)
            / f"{_check_name('conversation', conversation)}.jsonl"
        )

    async def append(self, actor: str, conversation: str, record: Mapping[str, Any]) -> None:
        path = self.path(actor, conversation)
        # 0700 directories, a 0600 file (README, "Sandbox and file modes").
        await anyio.to_thread.run_sync(private_dir, path.parent)
        async with aiofiles.open(path, "ab", opener=private_opener) as journal:
            # Whole or not at all: a line torn by a full disk would read as damage once the
            # next append follows it; out of space is a DiskFullFailure naming the file.
            line = encode_line(record)
            await anyio.to_thread.run_sync(
                functools.partial(append_whole, journal.fileno(), line, path, sync=True)
            )

    async def read(self, actor: str, conversation: str) -> list[dict[str, Any]]:
        path = self.path(actor, conversation)
        if not await anyio.Path(path).exists():
            return []
        async with aiofiles.open(path, "rb") as journal:
            lines = await journal.readlines()
        records: list[dict[str, Any]] = []
        good_bytes = 0
        for number, line in enumerate(lines, start=1):
            record, problem = _decode(line)
            if record is None:
                if number == len(lines):
                    # A crash mid-write leaves at most the last line torn: drop it and cut it
                    # off, so the next append does not follow garbage.
                    log.warning(
                        "journal.torn_line_dropped",
                        path=str(path),
                        actor=actor,
                        conversation=conversation,
                        line=number,
                        problem=problem,
                    )
                    await anyio.to_thread.run_sync(os.truncate, path, good_bytes)
                    break
                raise self.damaged(
                    actor,
                    conversation,
                    number,
                    f"{problem}, and it is not the last line, so not a write a crash tore",
                )
            records.append(record)
            good_bytes += len(line)
        return records

    async def conversations(self, actor: str) -> list[str]:
        directory = anyio.Path(self.root / _check_name("actor", actor))
        if not await directory.exists():
            return []
        return sorted([p.stem async for p in directory.glob("*.jsonl")])

    def damaged(
        self, actor: str, conversation: str, line: int, problem: str
    ) -> JournalCorruptError:
        path = self.path(actor, conversation)
        # Never repaired in place: the damaged copy is kept for a look (README.md, "After a
        # full disk or a damaged file").
        fix = (
            f"move it aside (e.g. `mv {path} {path}.damaged`) so that conversation starts "
            "afresh, or restore it from a backup"
        )
        return JournalCorruptError(
            path, line, actor=actor, conversation=conversation, problem=problem, fix=fix
        )


class MemoryJournalStore:
    """Journals kept in memory: for an in-memory runtime and for tests."""

    shared = False

    def __init__(self) -> None:
        self._records: dict[tuple[str, str], list[dict[str, Any]]] = {}

    def hold(self, actor: str, conversation: str) -> AbstractAsyncContextManager[None]:
        return _sole_owner(actor, conversation)

    async def length(self, actor: str, conversation: str) -> int:
        return len(self._records.get((actor, conversation), []))

    async def append(self, actor: str, conversation: str, record: Mapping[str, Any]) -> None:
        # Round-trip through JSON so what is kept is exactly what a file store would return.
        self._records.setdefault((actor, conversation), []).append(json.loads(json.dumps(record)))

    async def read(self, actor: str, conversation: str) -> list[dict[str, Any]]:
        return [dict(r) for r in self._records.get((actor, conversation), [])]

    async def conversations(self, actor: str) -> list[str]:
        return sorted(c for a, c in self._records if a == actor)

    def damaged(
        self, actor: str, conversation: str, line: int, problem: str
    ) -> JournalCorruptError:
        return JournalCorruptError(
            "in memory",
            line,
            actor=actor,
            conversation=conversation,
            problem=problem,
            fix="it lives in this process only: a restart starts that conversation afresh",
        )
