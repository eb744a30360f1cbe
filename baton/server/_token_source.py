"""Every process's token-log lines, read from the Redis stream the processes share.

With a `redis://` mailbox each process copies its token-log lines to `{<prefix>:tokens}`
(`baton.runtime.token_relay`; docs/token-log.md, "Across processes"). `TokenSource` reads
it: the lines it holds, oldest first, or the last N, then those added after a given entry.
`baton tail --mailbox` reads it alone; `GET /tokens?follow=true` and the live view of
`baton run` take their own process's records from its token log (at once, and even while
Redis is away) and the other processes' from here. `stream_records` is what a report reads.

Imported only when a Redis URL is given: `baton tail` on a file loads no redis-py.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from redis.exceptions import RedisClusterException, RedisError

from baton._log import get_logger
from baton.errors import RuntimeFailure
from baton.mailboxes.redis_client import RedisClient, connect
from baton.runtime.backoff import Backoff
from baton.runtime.settings import redact_url
from baton.runtime.token_log import TokenLog
from baton.runtime.token_relay import LINE_FIELD, stream_key

log = get_logger(__name__)

_PAGE = 1000  # entries per XRANGE / XREAD
_BLOCK = 1.0  # seconds one XREAD waits server-side; the socket timeout must exceed it
_SOCKET_TIMEOUT = _BLOCK + 10.0
_RETRY = Backoff(initial=0.2, maximum=5.0)
_FOLLOW_BUFFER = 10_000

Entry = tuple[str, str]
"""A stream entry: its id (`<ms>-<seq>`) and the token-log line it holds."""


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value


def _entry(entry_id: bytes | str, fields: dict[Any, Any]) -> Entry:
    line = fields.get(LINE_FIELD.encode()) or fields.get(LINE_FIELD) or b""
    return _text(entry_id), _text(line)


class TokenSource:
    """Reads the token-log stream of one deployment; open it with `TokenSource.open`."""

    def __init__(self, client: RedisClient, *, url: str, key: str) -> None:
        self.client = client
        self.url = url
        self.key = key

    @classmethod
    @asynccontextmanager
    async def open(cls, url: str, prefix: str = "baton") -> AsyncIterator[TokenSource]:
        """Connect for the block (to a single server, or the cluster the URL's node is one
        of); a one-line `RuntimeFailure` naming the URL when Redis does not answer."""
        try:
            client = await connect(url, socket_timeout=_SOCKET_TIMEOUT)
        except (RedisError, RedisClusterException, OSError) as exc:
            raise RuntimeFailure(
                f"cannot reach Redis at {redact_url(url)} ({exc}): start redis-server "
                "there, or read this host's own file without --mailbox"
            ) from None
        try:
            yield cls(client, url=url, key=stream_key(prefix))
        finally:
            with anyio.CancelScope(shield=True):
                await client.aclose()

    async def last_id(self) -> str:
        """The id of the newest entry (`0-0` for an empty stream): follow after it for what
        comes from now on."""
        newest: Any = await self.client.xrevrange(self.key, count=1)
        return _text(newest[0][0]) if newest else "0-0"

    async def history(self, last: int | None = None) -> AsyncGenerator[Entry, None]:
        """The entries the stream holds now, oldest first; with `last`, only the newest
        `last` of them."""
        if last is not None:
            newest: Any = await self.client.xrevrange(self.key, count=last) if last else []
            for entry_id, fields in reversed(newest):
                yield _entry(entry_id, fields)
            return
        start, end = "-", await self.last_id()
        while True:
            page: Any = await self.client.xrange(self.key, min=start, max=end, count=_PAGE)
            for entry_id, fields in page:
                yield _entry(entry_id, fields)
            if len(page) < _PAGE:
                return
            start = f"({_text(page[-1][0])}"

    async def follow(self, after: str) -> AsyncGenerator[Entry, None]:
        """Every entry added after the entry `after`, as it comes; endless. While Redis
        cannot be read it says so once in the process log and tries again."""
        attempt = 0
        while True:
            try:
                found: Any = await self.client.xread(
                    {self.key: after}, block=int(_BLOCK * 1000), count=_PAGE
                )
            except (RedisError, RedisClusterException, OSError) as exc:
                if attempt == 0:
                    log.warning(
                        "token_log.redis_unreadable", url=redact_url(self.url), error=str(exc)
                    )
                await anyio.sleep(_RETRY.delay(attempt))
                attempt += 1
                continue
            if attempt:
                log.info("token_log.redis_readable", url=redact_url(self.url))
                attempt = 0
            for _, entries in found or ():
                for entry_id, fields in entries:
                    entry = _entry(entry_id, fields)
                    after = entry[0]
                    yield entry


def _record(line: str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None
    return record if isinstance(record, dict) else None


async def stream_records(url: str, prefix: str = "baton") -> AsyncGenerator[dict[str, Any], None]:
    """Every record the stream holds now, of every process, oldest first (a line that is not
    a JSON object left out): what `baton report` reads with a Redis mailbox, in place of the
    files of the one host it runs on."""
    async with TokenSource.open(url, prefix) as source:
        async for _, line in source.history():
            record = _record(line)
            if record is not None:
                yield record


async def _others(
    token_log: TokenLog,
    sink: MemoryObjectSendStream[dict[str, Any]],
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Send `sink` the records other processes add to the stream from now on."""
    relay = token_log.relay
    assert relay is not None
    # The runtime's own client (one server or a cluster), which the runtime closes.
    source = TokenSource(relay.client, url=relay.url, key=relay.key)
    try:
        after = await source.last_id()
    except (RedisError, RedisClusterException, OSError):
        # Redis is away: what others add once it is back has ids from now on.
        after = f"{time.time_ns() // 1_000_000}-0"
    task_status.started()
    async for _, line in source.follow(after):
        record = _record(line)
        # This process's own records come from its token log, at once.
        if record is None or record.get("process") == token_log.process:
            continue
        try:
            sink.send_nowait(record)
        except anyio.WouldBlock:
            log.warning("token_log.follower_lagging")


@asynccontextmanager
async def other_processes(
    token_log: TokenLog,
) -> AsyncIterator[MemoryObjectReceiveStream[dict[str, Any]] | None]:
    """The records every other process of the deployment emits from now on, or None when
    `token_log` has no relay (no Redis mailbox: this process is the only one)."""
    if token_log.relay is None:
        yield None
        return
    send, receive = anyio.create_memory_object_stream[dict[str, Any]](_FOLLOW_BUFFER)
    async with anyio.create_task_group() as tg, receive, send:
        await tg.start(_others, token_log, send)
        try:
            yield receive
        finally:
            tg.cancel_scope.cancel()


@asynccontextmanager
async def follow_every_process(
    token_log: TokenLog,
) -> AsyncIterator[MemoryObjectReceiveStream[dict[str, Any]]]:
    """Every record emitted from now on: this process's from `token_log`, the others' from
    the stream (if any). It ends when `token_log` closes."""
    # The others first: once `token_log` counts this follower (`wait_followers`), the
    # stream's position is taken too, so nothing another process adds from then on is missed.
    async with other_processes(token_log) as others, token_log.follow() as local:
        if others is None:
            yield local
            return
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](_FOLLOW_BUFFER)
        async with anyio.create_task_group() as tg, receive, send:
            tg.start_soon(_relay_local, local, send)
            tg.start_soon(_relay_others, others, send)
            try:
                yield receive
            finally:
                tg.cancel_scope.cancel()


async def _relay_local(
    local: MemoryObjectReceiveStream[dict[str, Any]], send: MemoryObjectSendStream[dict[str, Any]]
) -> None:
    # The one owner of `send`: when the token log closes (the runtime is ending), the
    # merged stream ends too, once its reader has taken what it holds.
    async with send:
        async for record in local:
            await send.send(record)


async def _relay_others(
    others: MemoryObjectReceiveStream[dict[str, Any]], send: MemoryObjectSendStream[dict[str, Any]]
) -> None:
    try:
        async for record in others:
            await send.send(record)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        return  # the local side ended the stream
