"""The spend cap across processes: with a Redis mailbox every process adds its calls' cost to
one counter per run, and a round is stopped at the cap the Scheduler's process set, whichever
process makes the call (README.md, "Scaling out")."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from redis.asyncio import Redis

from baton import Runtime
from baton.agents.errors import SpendCapReachedFailure
from baton.pipeline.host import open_pipeline
from baton.pipeline.messages import StartScenario
from baton.pipeline.redis_spend import SharedSpend
from baton.pipeline.spend import RunSpend, SpendLedger
from tests.pipeline.test_cost_cap import scripted, spent, uncapped_run, wait_for
from tests.pipeline.test_scheduler import NAME

RUN = "leave@1"


class Heard(SpendLedger):
    """A ledger that sets `reached` once it hears the run's total reach `target`."""

    target = 0.0

    def __init__(self, shared: SharedSpend) -> None:
        super().__init__(shared=shared)
        self.reached = anyio.Event()

    def heard(self, conversation: str, run: RunSpend) -> None:
        super().heard(conversation, run)
        if self.spend(conversation).known_usd >= self.target:
            self.reached.set()


@asynccontextmanager
async def process(url: str, *, follow: bool = False) -> AsyncIterator[Heard]:
    """A ledger on its own connection, as another process has."""
    client = Redis.from_url(url)
    try:
        ledger = Heard(SharedSpend(client))
        async with ledger.sharing(follow=follow):
            yield ledger
    finally:
        await client.aclose()


async def test_two_processes_stop_at_one_shared_cap(redis_url: str) -> None:
    """Scheduler and worker each spend under the cap; together they reach it, and both stop."""
    async with process(redis_url) as scheduler, process(redis_url) as worker:
        scheduler.set_cap(RUN, 1.0)
        await scheduler.shared_up_to_date()
        worker.add(RUN, 0.6)
        await worker.check(RUN)
        await scheduler.check(RUN)
        scheduler.add(RUN, 0.5)
        await scheduler.shared_up_to_date()  # sent: what another process checks counts it
        with pytest.raises(SpendCapReachedFailure) as reached:
            await worker.check(RUN)
        with pytest.raises(SpendCapReachedFailure):
            await scheduler.check(RUN)
    assert 1.0 == reached.value.cap
    assert pytest.approx(1.1) == reached.value.spent


async def test_only_the_scheduler_process_shares_caps(redis_url: str) -> None:
    """A worker's own caps stay its own: the Scheduler's process decides the run's cap."""
    async with process(redis_url) as scheduler, process(redis_url) as worker:
        worker.shares_caps = False
        worker.set_cap(RUN, 0.1)
        scheduler.add(RUN, 0.5)
        await scheduler.shared_up_to_date()
        await worker.check(RUN)  # no cap in Redis: the worker's 0.1 is not the run's
        scheduler.set_cap(RUN, 0.4)
        await scheduler.shared_up_to_date()
        with pytest.raises(SpendCapReachedFailure):
            await worker.check(RUN)


async def test_the_scheduler_process_hears_what_every_process_spent(redis_url: str) -> None:
    """What a worker adds reaches the Scheduler's ledger (what `baton status` shows), and an
    unpriced call there makes the run's cost unknown too."""
    async with process(redis_url) as worker:
        worker.add(RUN, 0.25)
        await worker.shared_up_to_date()
        async with process(redis_url, follow=True) as scheduler:
            scheduler.target = 0.75
            worker.add(RUN, 0.5)
            worker.add(RUN, None)
            with anyio.fail_after(5):
                await scheduler.reached.wait()
            await worker.shared_up_to_date()
            with anyio.fail_after(5):
                while scheduler.spend(RUN).unknown_calls == 0:
                    await anyio.wait_all_tasks_blocked()
            assert (0.75, None) == (scheduler.spend(RUN).known_usd, scheduler.spend(RUN).usd)


async def test_a_workers_round_stops_at_the_cap_the_scheduler_set(
    redis_url: str, tmp_path: Path
) -> None:
    """`--actors scheduler` and a worker running init and execute on one Redis: the worker's
    round stops at the scenario's cap as in one process, and the Scheduler's state shows the
    cost of every call, the worker's included."""
    reference = tmp_path / "uncapped"
    reference.mkdir()
    await uncapped_run(reference)
    workspace = tmp_path / "capped"
    workspace.mkdir()
    scripted(workspace, cap=round(spent(reference) * 0.4, 4))
    with (workspace / "baton.toml").open("a") as toml:
        toml.write(f'\n[runtime]\nmailbox = "{redis_url}"\n')
    async with (
        Runtime.open(workspace) as here,
        open_pipeline(here, environ={}, roles=("scheduler",)),
        Runtime.open(workspace) as there,
        open_pipeline(there, environ={}, roles=("init", "execute")),
    ):
        await here.ask("scheduler", StartScenario(scenario=NAME))
        stopped = await wait_for(here, "completed", "failed", "stopped")
        assert "stopped" == stopped.phase
        with anyio.fail_after(10):
            while stopped.cost_usd != pytest.approx(spent(workspace)):
                await anyio.wait_all_tasks_blocked()
                stopped = await wait_for(here, "stopped")
    assert stopped.reason is not None
    assert stopped.reason.startswith("budget: spent $")
    assert stopped.max_cost_usd is not None
    assert stopped.cost_usd is not None
    assert stopped.cost_usd >= stopped.max_cost_usd
