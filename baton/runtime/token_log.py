"""The token log: `<workspace>/.baton/logs/tokens.jsonl`, one validated JSON record per line.

Records are rendered by a structlog pipeline (timestamp, context, schema check, JSON) on the
emitting task, then appended by one writer task with aiofiles, so emitting never blocks the
event loop on the disk. Rotation happens between whole lines: a line is never split. With a
Redis mailbox the writer also hands each batch to a `TokenRelay`, which copies it to the
stream every process shares (docs/token-log.md, "Across processes").
"""

from __future__ import annotations

import json
import math
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiofiles
import anyio
import structlog
from aiofiles.threadpool.binary import AsyncBufferedIOBase
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from structlog.typing import EventDict, WrappedLogger

from baton._log import get_logger
from baton._private import private_dir, private_opener
from baton.errors import DiskFullFailure, FileTooLargeFailure, StateFileError
from baton.runtime import disk_writes
from baton.runtime.disk_writes import append_whole

# Defined beside the paths, for readers that must not load this writer (`baton tail`);
# still imported from here by the writer's users.
from baton.runtime.log_files import TOKEN_LOG as TOKEN_LOG  # noqa: PLC0414
from baton.runtime.logging import current_actor, redact_secrets
from baton.runtime.token_records import record_model

if TYPE_CHECKING:
    # Only with a Redis mailbox, and then made by the runtime: redis-py is not loaded here.
    from baton.runtime.token_relay import TokenRelay

log = get_logger(__name__)

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
DEFAULT_BACKUPS = 5
_FOLLOW_BUFFER = 10_000
_CONTEXT_KEYS = ("scenario", "conversation")

capture_sinks: list[list[dict[str, Any]]] = []
"""Lists that every validated record of every `TokenLog` in the process is also appended to
(a copy each, `ts` included), while they are here: `baton.testing.capture_token_log()` adds
and removes them. Empty unless something captures, which costs `emit` one truthiness check."""


def _add_context(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    """Fill `actor`, `scenario` and `conversation` from the running task's context."""
    bound = structlog.contextvars.get_contextvars()
    for key in _CONTEXT_KEYS:
        event_dict.setdefault(key, bound.get(key))
    event_dict.setdefault("actor", bound.get("actor") or current_actor())
    return event_dict


def process_name() -> str:
    """`HOST:PID`: what names this process in the `process` field of its lines."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _validate(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    """Check the record against its event's schema; a bad record is a bug, reported, not written."""
    try:
        model = record_model(event_dict.get("event"))
        if model is None:
            raise ValueError(f"no record is registered for event {event_dict.get('event')!r}")
        record = model.model_validate(event_dict)
    except ValueError as exc:  # a pydantic ValidationError is one too
        log.error("token_log.invalid_record", record_event=event_dict.get("event"), error=str(exc))
        raise structlog.DropEvent from None
    dumped: EventDict = record.line()
    if capture_sinks:
        for sink in capture_sinks:
            sink.append(dict(dumped))
    return dumped


class _Enqueue:
    """The structlog 'logger' at the end of the pipeline: hands each line to the writer."""

    def __init__(self, sink: MemoryObjectSendStream[str]) -> None:
        self._sink = sink
        self.sent = 0  # lines handed to the writer so far

    def msg(self, line: str) -> None:
        try:
            self._sink.send_nowait(line)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            log.error("token_log.closed", line=line)
        else:
            self.sent += 1

    info = warning = error = debug = msg


class TokenLog:
    """Validated token-log records: appended to a file (if any) and streamed to followers."""

    def __init__(
        self,
        path: Path | None,
        *,
        max_bytes: int,
        backups: int,
        process: str | None = None,
        relay: TokenRelay | None = None,
    ) -> None:
        self.path = path
        self.process = process or process_name()
        self.relay = relay  # the shared stream's sender, with a Redis mailbox
        self._max_bytes = max_bytes
        self._backups = backups
        send, receive = anyio.create_memory_object_stream[str](math.inf)
        self._send = send
        self._receive = receive
        self._enqueue = _Enqueue(send)
        self._followers: set[MemoryObjectSendStream[dict[str, Any]]] = set()
        self._follower_added = anyio.Event()
        self._batch_done = anyio.Event()  # set (and replaced) after each batch is written
        self._file: AsyncBufferedIOBase | None = None
        self._size = 0
        self._written = 0
        self._closing = anyio.Event()  # the block ended: stop waiting for disk space
        self._unwritten = 0  # records given up on because the disk was full at the end
        self._too_large = 0  # records given up on because a fresh file could not take them
        self._logger = structlog.wrap_logger(
            self._enqueue,
            # Its own wrapper, not the global one: a level filter an application configures
            # for structlog must not drop token-log records (docs/token-log.md).
            wrapper_class=structlog.BoundLogger,
            processors=[
                _add_context,
                self._add_process,
                structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
                redact_secrets,
                _validate,
                structlog.processors.JSONRenderer(ensure_ascii=False),
            ],
        )

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        path: Path | None,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        backups: int = DEFAULT_BACKUPS,
        process: str | None = None,
        relay: TokenRelay | None = None,
    ) -> AsyncIterator[TokenLog]:
        """Run the writer for the block; on exit every emitted record is on disk (and handed
        to `relay`, if any). `process` names this process in every line (`HOST:PID` unless
        given)."""
        file: AsyncBufferedIOBase | None = None
        if path is not None:
            try:
                # 0700 directories, 0600 files (README, "Sandbox and file modes").
                await anyio.to_thread.run_sync(private_dir, path.parent)
                if await anyio.Path(path).exists() and not await anyio.Path(path).is_file():
                    if await anyio.Path(path).is_dir():
                        raise IsADirectoryError(path)
                    # Opening a FIFO to append would wait for a reader for ever.
                    raise StateFileError(path, "is not a regular file", "move it aside")
                file = await aiofiles.open(path, "ab", opener=private_opener)
            except IsADirectoryError:
                raise StateFileError(
                    path, "is a directory, not the token log", "move it aside, then start again"
                ) from None
            except OSError as exc:
                raise StateFileError(
                    path,
                    f"cannot be opened for appending ({exc.strerror or exc})",
                    f"check that {path.parent} is a writable directory",
                ) from None
        token_log = cls(path, max_bytes=max_bytes, backups=backups, process=process, relay=relay)
        if path is not None:
            token_log._file = file
            token_log._size = (await anyio.Path(path).stat()).st_size
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(token_log._write_all)
                try:
                    yield token_log
                finally:
                    token_log._closing.set()
                    token_log._send.close()
            if token_log._unwritten:
                log.error(
                    "token_log.unwritten",
                    path=str(path),
                    records=token_log._unwritten,
                    reason="no disk space when the log closed",
                )
            if token_log._too_large:
                log.error(
                    "token_log.unwritten",
                    path=str(path),
                    records=token_log._too_large,
                    reason="larger than a file may grow (ulimit -f)",
                )
        finally:
            if token_log._file is not None:
                # Shielded: when the block is cancelled the file must still be closed.
                with anyio.CancelScope(shield=True):
                    await token_log._file.close()
            for follower in token_log._followers:
                follower.close()

    def _add_process(self, _: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
        event_dict.setdefault("process", self.process)
        return event_dict

    def emit(self, event: str, **fields: Any) -> None:
        """Record one event; fields are checked against the event's schema."""
        self._logger.info(event, **fields)

    @property
    def written(self) -> int:
        """Records appended so far (for status and tests)."""
        return self._written

    @asynccontextmanager
    async def follow(self) -> AsyncIterator[MemoryObjectReceiveStream[dict[str, Any]]]:
        """Receive every record emitted from now on, as a dict, until the block ends."""
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](_FOLLOW_BUFFER)
        self._followers.add(send)
        added, self._follower_added = self._follower_added, anyio.Event()
        added.set()
        try:
            async with receive:
                yield receive
        finally:
            self._followers.discard(send)
            send.close()

    async def drained(self, timeout: float = 5.0) -> bool:
        """Wait until every record emitted so far is written and handed to the followers
        (the writer idle, nothing queued); False if `timeout` seconds passed first."""
        emitted = self._enqueue.sent
        with anyio.move_on_after(timeout):
            while self._written < emitted:
                await self._batch_done.wait()
            return True
        return False

    async def wait_followers(self, count: int = 1) -> None:
        """Return once at least `count` followers receive records (say, a client's tail)."""
        while len(self._followers) < count:
            await self._follower_added.wait()

    async def _write_all(self) -> None:
        async with self._receive:
            async for first in self._receive:
                batch = [first]
                while True:
                    try:
                        batch.append(self._receive.receive_nowait())
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                if self._file is not None:
                    await self._append(batch)
                if self.relay is not None:
                    self.relay.offer(batch)  # never waits: Redis is the relay's task's concern
                self._written += len(batch)
                self._notify(batch)
                done, self._batch_done = self._batch_done, anyio.Event()
                done.set()

    async def _append(self, batch: list[str]) -> None:
        # Rotation is decided line by line, so a file never passes max_bytes unless one line
        # alone is bigger (it is then written whole: a record is never split).
        chunk = bytearray()
        for line in batch:
            data = f"{line}\n".encode()
            pending = self._size + len(chunk)
            if pending > 0 and pending + len(data) > self._max_bytes:
                await self._flush(chunk)
                chunk.clear()
                await self._rotate()
            chunk += data
        await self._flush(chunk)

    async def _flush(self, chunk: bytearray) -> None:
        if not chunk:
            return
        assert self._file is not None
        assert self.path is not None
        data = bytes(chunk)
        attempt = 0
        while True:
            try:
                await anyio.to_thread.run_sync(append_whole, self._file.fileno(), data, self.path)
                break
            except FileTooLargeFailure as exc:
                await self._past_size_limit(exc, data)
                return
            except DiskFullFailure as exc:
                # The records wait here, in order, and go to disk once there is room: a full
                # disk delays the log and loses none of it (README.md, "After a full disk or
                # a damaged file") — unless the process is stopping, which must not wait for
                # room: then they are counted, said once, and left out.
                if self._closing.is_set():
                    self._unwritten += data.count(b"\n")
                    return
                if attempt == 0:
                    log.warning("token_log.disk_full", path=str(self.path), error=str(exc))
                with anyio.move_on_after(disk_writes.DISK_FULL_RETRY.delay(attempt)):
                    await self._closing.wait()
                attempt += 1
        if attempt:
            log.info("token_log.disk_space_back", path=str(self.path))
        self._size += len(chunk)

    async def _past_size_limit(self, error: FileTooLargeFailure, data: bytes) -> None:
        """`data` did not fit: the file may not grow (`ulimit -f`, the filesystem's largest
        file), and no wait changes that. So the log rotates now, and from now on before a
        file reaches that size, and goes on in fresh files (README.md, "After a full disk or
        a damaged file"); what even an empty file cannot take (one record larger than a
        file may grow) is left out, counted, and said."""
        lines = data.decode().split("\n")[:-1]
        if self._size == 0 and (len(lines) == 1 or error.limit is None):
            if not self._too_large:
                log.error("token_log.file_too_large", path=str(self.path), error=str(error))
            self._too_large += len(lines)
            return
        # Not past the file's size at the failure: a fresh file takes at least that much.
        cap = error.limit if error.limit is not None else self._size
        self._max_bytes = min(self._max_bytes, cap)
        log.warning(
            "token_log.rotated_at_size_limit",
            path=str(self.path),
            max_bytes=self._max_bytes,
            error=str(error),
        )
        if self._size:
            await self._rotate()
        await self._append(lines)  # split into files of at most max_bytes

    async def _rotate(self) -> None:
        assert self._file is not None
        assert self.path is not None
        await self._file.close()
        for index in range(self._backups - 1, 0, -1):
            older = anyio.Path(f"{self.path}.{index}")
            if await older.exists():
                await older.rename(f"{self.path}.{index + 1}")
        await anyio.Path(self.path).rename(f"{self.path}.1")
        self._file = await aiofiles.open(self.path, "ab", opener=private_opener)
        self._size = 0

    def _notify(self, batch: list[str]) -> None:
        if not self._followers:
            return
        records = [json.loads(line) for line in batch]
        for follower in list(self._followers):
            for record in records:
                try:
                    follower.send_nowait(record)
                except anyio.WouldBlock:
                    # A follower that stopped reading must not stall the log: it loses
                    # lines (the file still has them) rather than holding everyone up.
                    log.warning("token_log.follower_lagging")
                    break
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    self._followers.discard(follower)
                    break
