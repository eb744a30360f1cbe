"""`baton status` with no process running reads the Scheduler's records where `baton run`
keeps them: the workspace's files, or Redis when baton.toml names a Redis mailbox."""

from __future__ import annotations

import json
from pathlib import Path

from redis.asyncio import Redis

from baton.pipeline.redis_scenario_store import RedisScenarioStore
from baton.pipeline.scenario import ScenarioConfig, ScenarioRecord
from baton.server._status_offline import offline_status


async def test_offline_status_reads_the_records_in_redis(
    redis_client: Redis, redis_url: str, tmp_path: Path
) -> None:
    """A workspace on a Redis mailbox: its scenarios and damaged records come from Redis."""
    (tmp_path / "baton.toml").write_text(f'[runtime]\nmailbox = "{redis_url}"\n')
    store = RedisScenarioStore(redis_client)
    config = ScenarioConfig(name="leave", requirement="leave requests")
    await store.save(ScenarioRecord(scenario="leave", requirement="leave", config=config))
    await redis_client.set(store.key("broken"), b"{garbage")
    await redis_client.sadd(store.index, "broken")
    shown = await offline_status(tmp_path)
    body = json.loads(await offline_status(tmp_path, as_json=True))
    assert f"baton is not running here; Redis at {redis_url} says:" == shown.splitlines()[0]
    assert "leave" in shown.splitlines()[2]
    assert "damaged record: broken: Redis key {baton:scheduler}:record:broken is not JSON" in shown
    assert (["leave"], ["broken"]) == (
        [state["scenario"] for state in body["scenarios"]],
        list(body["damaged_scenarios"]),
    )
