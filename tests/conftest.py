"""Shared fixtures: every test runs on asyncio (the supported backend); real Redis on demand."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import redis
from redis.asyncio import Redis

from tests.redis_server import RedisServer, find_executable, running_redis


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """A redis-server (no persistence) shared by the session; started only if a test asks."""
    if find_executable() is None:
        # Fail, not skip: a missing server must not pass as a tested Redis backend.
        pytest.fail("redis-server is not installed: `sudo apt-get install -y redis-server`")
    with running_redis() as server:
        yield server


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The URL of an empty database: each test starts from nothing another test left."""
    client = redis.Redis.from_url(redis_server.url)
    try:
        client.flushall()
    finally:
        client.close()
    return redis_server.url


@pytest.fixture
async def redis_client(redis_url: str) -> AsyncIterator[Redis]:
    """An asyncio client of the test's empty database, closed after the test."""
    client = Redis.from_url(redis_url)
    yield client
    await client.aclose()
