"""Reading the token log file: every line now, or following it across rotation.

`baton tail` reads the file directly, so it works whether or not a runtime is running.
Following polls at end of file (as `tail -f` does): a rotation shows as the path naming a
new file, whose old one is read to its end first; a truncation as the file shrinking.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import aiofiles
import anyio
from aiofiles.threadpool.binary import AsyncBufferedReader
from pydantic import ValidationError

from baton.errors import validation_problems
from baton.pipeline.records import MemoryRecalled  # noqa: F401 - every layer's records registered
from baton.runtime.token_records import events, token_record_adapter

POLL_INTERVAL = 0.25
_CHUNK = 64 * 1024

Sleep = Callable[[float], Awaitable[None]]


def record_matches(record: Mapping[str, Any], *, actor: str | None, event: str | None) -> bool:
    """Whether `record` passes the filters; `event` also matches its family (`handoff`)."""
    if actor is not None and record.get("actor") != actor:
        return False
    if event is None:
        return True
    name = str(record.get("event", ""))
    return name == event or name.startswith(f"{event}.")


_TEXT_FIELDS = ("actor", "scenario", "conversation")
# A record written by another baton version may lack a field or carry a new one: it still
# renders (absent fields show as None). A wrong type is what a renderer cannot show.
_TOLERATED = ("missing", "extra_forbidden")


def record_problem(record: Mapping[str, Any]) -> str | None:
    """Why `record` (a decoded JSON object) is not a token-log record `baton tail` can render,
    or None when it is one (README.md, "Token log": the fields and their types)."""
    event = record.get("event")
    if not isinstance(event, str):
        return "'event' is not a string"
    if not isinstance(record.get("ts", ""), str):
        return "'ts' is not a string"
    for key in _TEXT_FIELDS:
        if not isinstance(record.get(key), str | None):
            return f"{key!r} is not a string"
    if event not in events():
        return None  # an event this version does not know: shown field by field
    try:
        token_record_adapter().validate_python(record)
    except ValidationError as exc:
        # The union's first location is the event's tag: the field alone names the problem.
        wrong = [
            {**error, "loc": error["loc"][1:]}
            for error in exc.errors(include_url=False)
            if error["type"] not in _TOLERATED
        ]
        if wrong:
            return "; ".join(validation_problems(wrong, show_input=False))
    return None


async def read_lines(path: Path) -> AsyncGenerator[str, None]:
    """Every complete line of the file now at `path` (none if there is no file)."""
    try:
        handle = await aiofiles.open(path, "rb")
    except FileNotFoundError:
        return
    try:
        async for raw in handle:
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if line.strip():
                yield line
    finally:
        with anyio.CancelScope(shield=True):  # a cancelled reader still closes the file
            await handle.close()


class _Follower:
    def __init__(
        self, path: Path, interval: float, sleep: Sleep, on_caught_up: Callable[[], None] | None
    ) -> None:
        self._path = path
        self._interval = interval
        self._sleep = sleep
        self._pending = b""
        self._on_caught_up = on_caught_up

    async def _open(self) -> AsyncBufferedReader:
        while True:
            try:
                return await aiofiles.open(self._path, "rb")
            except FileNotFoundError:
                await self._sleep(self._interval)

    async def _replaced(self, handle: AsyncBufferedReader) -> bool:
        try:
            current = await anyio.Path(self._path).stat()
        except FileNotFoundError:
            return True
        return current.st_ino != os.fstat(handle.fileno()).st_ino

    async def _truncated(self, handle: AsyncBufferedReader) -> bool:
        try:
            current = await anyio.Path(self._path).stat()
        except FileNotFoundError:
            return False
        return current.st_size < await handle.tell()

    def _split(self, chunk: bytes) -> list[str]:
        *complete, self._pending = (self._pending + chunk).split(b"\n")
        return [
            text
            for raw in complete
            if (text := raw.decode("utf-8", errors="replace").rstrip("\r")).strip()
        ]

    async def lines(self) -> AsyncGenerator[str, None]:
        handle = await self._open()
        try:
            while True:
                chunk = await handle.read(_CHUNK)
                if chunk:
                    for line in self._split(chunk):
                        yield line
                    continue
                if await self._replaced(handle):
                    # The writer closes the old file before renaming it, so what it holds
                    # now is all it will ever hold: read it out, then take the new one.
                    for line in self._split(await handle.read()):
                        yield line
                    self._pending = b""
                    await handle.close()
                    handle = await self._open()
                elif await self._truncated(handle):
                    await handle.seek(0)
                    self._pending = b""
                else:
                    if self._on_caught_up is not None:
                        # Everything the file held when the tail began has been read.
                        self._on_caught_up()
                        self._on_caught_up = None
                    await self._sleep(self._interval)
        finally:
            with anyio.CancelScope(shield=True):  # a cancelled tail still closes the file
                await handle.close()


def follow_lines(
    path: Path,
    *,
    interval: float = POLL_INTERVAL,
    sleep: Sleep = anyio.sleep,
    on_caught_up: Callable[[], None] | None = None,
) -> AsyncGenerator[str, None]:
    """Every line of the file at `path`, then each line appended, across rotation; endless.

    Waits for the file if it does not exist yet. `sleep` is what waits between polls;
    `on_caught_up` is called once, the first time the end of the file is reached.
    """
    return _Follower(path, interval, sleep, on_caught_up).lines()
