"""With a Redis mailbox the Scheduler's records live in Redis: a Scheduler started on another
host, with an empty workspace and the same Redis, takes every scenario up where it stood
(README.md, "Scaling out")."""

from __future__ import annotations

from pathlib import Path

from baton import Runtime
from baton.pipeline.host import open_pipeline
from baton.pipeline.messages import StartScenario
from tests.pipeline.test_scheduler import (
    NAME,
    design_turns,
    make_scenario,
    state_of,
    wait_for_phase,
)
from tests.runtime.test_distributed import shared


async def test_a_scheduler_on_a_fresh_workspace_resumes_the_record_from_redis(
    redis_url: str, tmp_path: Path
) -> None:
    """Stopped while its design awaits approval, the scenario is found awaiting it by a
    Scheduler started on an empty folder, which writes no record file there."""
    first = tmp_path / "first"
    make_scenario(first, init=design_turns(1), execute=[])
    async with (
        Runtime.open(first, config=shared(redis_url)) as runtime,
        open_pipeline(runtime, environ={}),
    ):
        await runtime.ask("scheduler", StartScenario(scenario=NAME))
        before = await wait_for_phase(runtime, "awaiting_approval")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    async with (
        Runtime.open(fresh, config=shared(redis_url)) as runtime,
        open_pipeline(runtime, environ={}, roles=("scheduler",)),
    ):
        after = await state_of(runtime)
    assert before == after
    assert "awaiting_approval" == after.phase
    assert not (fresh / ".baton" / "scheduler").exists()
    assert not (first / ".baton" / "scheduler").exists()
