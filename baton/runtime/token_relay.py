"""The token log's copy in Redis: every process's lines in one bounded stream.

With a `redis://` mailbox the processes of a deployment may run on hosts that share no disk,
so each one's token-log lines also go to the stream `{<prefix>:tokens}` (docs/token-log.md,
"Across processes"), where `baton tail --mailbox`, `GET /tokens?follow=true` and the live
view of `baton run` read every process's lines. The writer of the token log hands each batch
it has written to `TokenRelay.offer`, which only appends to a bounded buffer; one task sends
the buffer with XADD (`MAXLEN ~ runtime.redis.token_log_max`), so a slow or absent Redis
never holds up a model call. An outage is logged once and retried; while it lasts the buffer
keeps the newest lines and drops the oldest (each process's file still has them).

Imported only when the mailbox is Redis: `import baton.runtime` loads no redis-py.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import anyio
from redis.asyncio import Redis, RedisCluster
from redis.exceptions import RedisClusterException, RedisError

from baton._log import get_logger
from baton.runtime.backoff import Backoff
from baton.runtime.settings import RedisConfig, redact_url

log = get_logger(__name__)

LINE_FIELD = "line"
"""The field of a stream entry that holds the token-log line, as the file has it."""
DEFAULT_BUFFER = 10_000
"""Lines a process keeps for Redis while it cannot send them; past that the oldest go."""
_BATCH = 500  # lines per pipeline of XADDs
_CLOSE_DRAIN = 2.0  # seconds a closing process spends sending what it still holds
RETRY = Backoff(initial=0.2, maximum=5.0)


def stream_key(prefix: str) -> str:
    """The stream of every process's token-log lines. The hash tag keeps the key on one slot
    of a Redis Cluster whatever the other keys are named."""
    return f"{{{prefix}:tokens}}"


class TokenRelay:
    """Sends the lines `offer` is given to the stream, in order, off the emitting task."""

    def __init__(
        self,
        client: Redis | RedisCluster,
        *,
        url: str,
        key: str,
        max_len: int,
        buffer: int = DEFAULT_BUFFER,
        retry: Backoff = RETRY,
    ) -> None:
        self.client = client
        self.url = url
        self.key = key
        self.max_len = max_len
        self.buffer_size = buffer
        self.sent = 0  # lines Redis has taken
        self.dropped = 0  # lines left out because the buffer was full
        self._retry = retry
        self._buffer: deque[str] = deque()
        self._in_flight: list[str] = []  # taken from the buffer, not yet taken by Redis
        self._wake = anyio.Event()
        self._sent_event = anyio.Event()  # set (and replaced) after each batch is sent
        self._closing = anyio.Event()
        self._down = False

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        client: Redis | RedisCluster,
        url: str,
        settings: RedisConfig,
        *,
        buffer: int = DEFAULT_BUFFER,
        retry: Backoff = RETRY,
    ) -> AsyncIterator[TokenRelay]:
        """Send over `client` (the caller's: it stays open) for the block; on exit what is
        still held is sent for up to a couple of seconds, and what is left then is counted
        in the process log."""
        relay = cls(
            client,
            url=url,
            key=stream_key(settings.prefix),
            max_len=settings.token_log_max,
            buffer=buffer,
            retry=retry,
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(relay._send_all)
            try:
                yield relay
            finally:
                relay._closing.set()
                relay._wake.set()
                tg.cancel_scope.deadline = anyio.current_time() + _CLOSE_DRAIN
        if relay.pending or relay.dropped:
            log.warning(
                "token_log.redis_unsent",
                url=redact_url(url),
                unsent=relay.pending,
                dropped=relay.dropped,
            )

    def offer(self, lines: Sequence[str]) -> None:
        """Queue lines for the stream; never waits. A full buffer drops its oldest lines."""
        for line in lines:
            if len(self._buffer) >= self.buffer_size:
                self._buffer.popleft()
                self.dropped += 1
            self._buffer.append(line)
        if lines:
            self._wake.set()

    @property
    def pending(self) -> int:
        """Lines waiting to be sent (a batch on its way included)."""
        return len(self._buffer) + len(self._in_flight)

    async def flushed(self, timeout: float) -> bool:
        """Wait until nothing waits to be sent; False if `timeout` seconds passed first."""
        with anyio.move_on_after(timeout):
            while self.pending:
                await self._sent_event.wait()
            return True
        return False

    async def _send_all(self) -> None:
        attempt = 0
        while True:
            if not self._buffer:
                if self._closing.is_set():
                    return
                await self._wake.wait()
                self._wake = anyio.Event()
                continue
            batch = [self._buffer.popleft() for _ in range(min(_BATCH, len(self._buffer)))]
            self._in_flight = batch
            try:
                await self._send(batch)
            except (RedisError, RedisClusterException, OSError) as exc:
                self._in_flight = []
                self._put_back(batch)
                if not self._down:
                    self._down = True
                    log.warning(
                        "token_log.redis_unavailable", url=redact_url(self.url), error=str(exc)
                    )
                if self._closing.is_set():
                    return  # a stopping process does not wait for Redis to come back
                with anyio.move_on_after(self._retry.delay(attempt)):
                    await self._closing.wait()
                attempt += 1
                continue
            attempt = 0
            self._in_flight = []
            self.sent += len(batch)
            if self._down:
                self._down = False
                log.info("token_log.redis_back", url=redact_url(self.url), dropped=self.dropped)
            done, self._sent_event = self._sent_event, anyio.Event()
            done.set()

    async def _send(self, batch: list[str]) -> None:
        # Not a transaction, which a cluster's pipeline does not take: a batch cut off by an
        # outage is sent again whole, so a line may, rarely, be in the stream twice.
        async with self.client.pipeline(transaction=False) as pipe:
            for line in batch:
                pipe.xadd(self.key, {LINE_FIELD: line}, maxlen=self.max_len, approximate=True)
            await pipe.execute()

    def _put_back(self, batch: list[str]) -> None:
        """Return an unsent batch to the front, in order, within the buffer's bound."""
        room = self.buffer_size - len(self._buffer)
        kept = batch[-room:] if room > 0 else []
        self.dropped += len(batch) - len(kept)
        self._buffer.extendleft(reversed(kept))
