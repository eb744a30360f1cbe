"""Fixtures of the mailbox contract: each backend (`backends.py`) in turn, on fresh storage,
or only those declaring a trait."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mailboxes.backends import (
    TRAITS,
    Backend,
    kinds,
    memory_backend,
    redis_backend,
    sqlite_backend,
)


def backend_of(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """The backend the fixture's parameter names, its storage under the test's tmp_path."""
    kind = str(request.param)
    if kind == "memory":
        return memory_backend()
    if kind == "sqlite":
        return sqlite_backend(tmp_path / "mailboxes.sqlite3")
    # Asked for only here, so the memory and SQLite runs start no redis-server.
    if kind == "redis-cluster":
        return redis_backend(request.getfixturevalue("redis_cluster_client"))
    return redis_backend(request.getfixturevalue("redis_client"))


@pytest.fixture(params=list(TRAITS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Each backend in turn, on fresh storage."""
    return backend_of(request, tmp_path)


@pytest.fixture(params=kinds(durable=True))
def durable_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Each durable backend in turn, on fresh storage."""
    return backend_of(request, tmp_path)


@pytest.fixture(params=kinds(durable=False))
def volatile_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Each backend whose messages live only in the process, on fresh storage."""
    return backend_of(request, tmp_path)


@pytest.fixture(params=kinds(drains_backlog_on_close=True))
def draining_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Each backend that hands out its whole queue after `close`, on fresh storage."""
    return backend_of(request, tmp_path)
