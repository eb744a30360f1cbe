"""The Scheduler's record stores hold one contract: the file store (the default) and the Redis
store (a Redis mailbox) save and load records alike, and a record that does not read back is
named with where it is, never dropped unseen (docs/handoffs.md, "Delivery and the Scheduler")."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from redis.asyncio import Redis

from baton.pipeline.redis_scenario_store import RedisScenarioStore
from baton.pipeline.scenario import ScenarioConfig, ScenarioRecord
from baton.pipeline.scenario_store import FileScenarioStore, ScenarioStore


@dataclass
class Backend:
    """A store, and how a test damages or moves aside one of its records behind its back."""

    store: ScenarioStore
    corrupt: Callable[[str, bytes], Awaitable[None]]
    move_aside: Callable[[str], Awaitable[None]]


def record(name: str, requirement: str = "leave requests") -> ScenarioRecord:
    config = ScenarioConfig(name=name, requirement=requirement)
    return ScenarioRecord(scenario=name, requirement=requirement, config=config)


def file_backend(workspace: Path) -> Backend:
    store = FileScenarioStore(workspace)

    async def corrupt(name: str, data: bytes) -> None:
        store.root.mkdir(parents=True, exist_ok=True)
        store.path(name).write_bytes(data)

    async def move_aside(name: str) -> None:
        store.path(name).rename(store.path(name).with_suffix(".json.damaged"))

    return Backend(store, corrupt, move_aside)


def redis_backend(client: Redis) -> Backend:
    store = RedisScenarioStore(client, url="redis://127.0.0.1:6379/0")

    async def corrupt(name: str, data: bytes) -> None:
        await client.set(store.key(name), data)
        await client.sadd(store.index, name)

    async def move_aside(name: str) -> None:
        await client.rename(store.key(name), f"{store.key(name)}.damaged")

    return Backend(store, corrupt, move_aside)


@pytest.fixture(params=["file", "redis"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    if request.param == "file":
        yield file_backend(tmp_path)
        return
    client = Redis.from_url(request.getfixturevalue("redis_url"))
    try:
        yield redis_backend(client)
    finally:
        await client.aclose()


async def test_saved_records_load_back_as_saved(backend: Backend) -> None:
    """Every saved record loads back equal, the latest save of each scenario winning."""
    leave, trip = record("leave"), record("trip")
    await backend.store.save(leave)
    await backend.store.save(trip)
    trip.phase = "executing"
    trip.note("approved", handoff_id="h-1")
    await backend.store.save(trip)
    assert {"leave": leave, "trip": trip} == await backend.store.load_all()
    assert {} == backend.store.damaged


async def test_an_empty_store_loads_nothing(backend: Backend) -> None:
    """Nothing saved yet: no record and no damage."""
    assert ({}, {}) == (await backend.store.load_all(), backend.store.damaged)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"{not json", "is not JSON"),
        (b"", "is empty"),
        (b'{"scenario": "broken"}', "is not a valid scenario record"),
        (b"\xff\xfe", "is not UTF-8 text"),
        (record("other").model_dump_json().encode(), "holds scenario 'other', not 'broken'"),
    ],
)
async def test_a_damaged_record_is_named_and_the_others_load(
    backend: Backend, data: bytes, problem: str
) -> None:
    """A record that does not read back is left out, its error naming where it is, what is
    wrong and what to do; the other records load."""
    await backend.store.save(record("leave"))
    await backend.corrupt("broken", data)
    loaded = await backend.store.load_all()
    error = backend.store.damaged["broken"]
    assert ["leave"] == sorted(loaded)
    assert str(backend.store.path("broken")) == error.path
    assert problem in error.problem
    assert "move it aside" in error.fix
    assert "submit 'broken' again" in error.fix


async def test_a_damaged_record_moved_aside_no_longer_refuses(backend: Backend) -> None:
    """Once the damaged record is moved aside, `damage` no longer names it."""
    await backend.corrupt("broken", b"garbage")
    await backend.store.load_all()
    assert await backend.store.damage("broken") is not None
    await backend.move_aside("broken")
    assert await backend.store.damage("broken") is None
    assert ({}, {}) == (await backend.store.load_all(), backend.store.damaged)


async def test_a_redis_key_of_another_type_is_named(redis_client: Redis) -> None:
    """A hash where a record's string should be is named as such, not passed over."""
    store = RedisScenarioStore(redis_client)
    await redis_client.hset(store.key("broken"), "a", "b")
    await redis_client.sadd(store.index, "broken")
    assert {} == await store.load_all()
    error = store.damaged["broken"]
    assert "Redis key {baton:scheduler}:record:broken is a Redis hash, not a scenario record" in (
        str(error)
    )
    assert "RENAME '{baton:scheduler}:record:broken'" in error.fix


async def test_redis_records_share_one_hash_tag(redis_client: Redis) -> None:
    """Every key of the records carries the `{<prefix>:scheduler}` tag: one cluster slot."""
    store = RedisScenarioStore(redis_client, prefix="team")
    await store.save(record("leave"))
    keys = sorted(k.decode() if isinstance(k, bytes) else k for k in await redis_client.keys())
    assert ["{team:scheduler}:record:leave", "{team:scheduler}:records"] == keys
