"""The token log's copy in Redis (docs/token-log.md, "Across processes"), against a real
redis-server: bounded by MAXLEN, and an outage neither stops nor slows emitting."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import structlog
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from baton.runtime.backoff import Backoff
from baton.runtime.settings import RedisConfig
from baton.runtime.token_log import TokenLog
from baton.runtime.token_relay import TokenRelay, stream_key
from baton.testing import read_token_log
from tests.redis_server import running_redis

FAST = Backoff(initial=0.01, maximum=0.05, jitter=0)
KEY = stream_key("baton")


def restarted(index: int) -> dict[str, Any]:
    """The fields of an `actor.restarted` record numbered `index` (a kernel event)."""
    return {"actor": "worker", "restarts": index, "backoff_ms": 1.0, "reason": f"r{index}"}


def no_retry_client(url: str) -> Redis:
    """A client that fails at once while the server is down (the relay retries itself)."""
    return Redis.from_url(url, retry=Retry(NoBackoff(), 0), socket_connect_timeout=1.0)


@asynccontextmanager
async def relayed_log(
    client: Redis, url: str, path: Path | None, **relay: Any
) -> AsyncIterator[tuple[TokenLog, TokenRelay]]:
    settings = RedisConfig(token_log_max=relay.pop("token_log_max", 100_000))
    async with (
        TokenRelay.open(client, url, settings, retry=FAST, **relay) as sender,
        TokenLog.open(path, process="host-a:1", relay=sender) as tokens,
    ):
        yield tokens, sender


async def stream_lines(client: Redis) -> list[dict[str, Any]]:
    entries: Any = await client.xrange(KEY)
    return [json.loads(fields[b"line"]) for _, fields in entries]


async def test_the_stream_stays_bounded_by_token_log_max(
    redis_client: Redis, redis_url: str
) -> None:
    """2,000 lines through a relay with `token_log_max = 10` leave at most one stream node
    (100 entries) beyond 10 in Redis, the newest line last."""
    async with relayed_log(redis_client, redis_url, None, token_log_max=10) as (tokens, sender):
        for index in range(1, 2001):
            tokens.emit("actor.restarted", **restarted(index))
        assert await tokens.drained()
        assert await sender.flushed(10)
    length = await redis_client.xlen(KEY)
    newest: Any = await redis_client.xrevrange(KEY, count=1)
    assert 10 <= length <= 110, length
    assert 2000 == json.loads(newest[0][1][b"line"])["restarts"]


async def test_an_outage_neither_stops_nor_slows_emit_and_lines_flow_again(
    tmp_path: Path,
) -> None:
    """With Redis down, 500 emits take well under a second and reach the file; the outage is
    logged once; once Redis is back every line emitted meanwhile is in the stream, in order,
    once."""
    with running_redis() as server:
        client = no_retry_client(server.url)
        path = tmp_path / "tokens.jsonl"
        try:
            async with relayed_log(client, server.url, path) as (tokens, sender):
                tokens.emit("actor.restarted", **restarted(1))
                assert await sender.flushed(10)
                server.stop()
                with structlog.testing.capture_logs() as logs:
                    started = time.monotonic()
                    for index in range(2, 502):
                        tokens.emit("actor.restarted", **restarted(index))
                    emitting = time.monotonic() - started
                    assert await tokens.drained()
                    assert 501 == len(read_token_log(path))
                    assert 0 < sender.pending
                    server.start(port=server.port)
                    assert await sender.flushed(10)
                events = [entry["event"] for entry in logs]
            assert emitting < 1.0, emitting
            assert 1 == events.count("token_log.redis_unavailable")
            assert "token_log.redis_back" in events
            # Line 1 went before the outage: whether the restarted server kept it is its own
            # business; each line emitted meanwhile is there, in order, and only once.
            restarts = [line["restarts"] for line in await stream_lines(client)]
            assert list(range(2, 502)) == [index for index in restarts if index != 1]
        finally:
            await client.aclose()


async def test_a_full_buffer_drops_the_oldest_unsent_lines(tmp_path: Path) -> None:
    """A relay holding 5 lines while Redis is down keeps the newest 5 of 20, counts 15
    dropped, and sends those 5 once Redis is back."""
    with running_redis() as server:
        client = no_retry_client(server.url)
        try:
            async with relayed_log(client, server.url, None, buffer=5) as (tokens, sender):
                server.stop()
                for index in range(1, 21):
                    tokens.emit("actor.restarted", **restarted(index))
                assert await tokens.drained()
                server.start(port=server.port)
                assert await sender.flushed(10)
            assert 15 == sender.dropped
            assert [16, 17, 18, 19, 20] == [line["restarts"] for line in await stream_lines(client)]
        finally:
            await client.aclose()
