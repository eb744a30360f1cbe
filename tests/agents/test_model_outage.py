"""A model that stays unavailable after the SDK's retries parks the round instead of failing
the handler: no restart, a `waiting` note in the scenario's state, a retry on a backoff."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from anyio.lowlevel import checkpoint
from pydantic import BaseModel
from structlog.testing import capture_logs

from baton import Runtime, handler
from baton.agents.journal import FileJournalStore
from baton.models.anthropic import AnthropicModel
from baton.models.errors import ModelCallFailure
from baton.models.retry import ModelRetry, unavailable_reason
from baton.pipeline.agent_context import AgentContext
from baton.pipeline.host import open_pipeline
from baton.pipeline.messages import Dispatch, RoundWaiting, StartScenario
from baton.pipeline.offline_model import OfflineModel
from baton.pipeline.roles import InitActor, agent_setup
from baton.testing import MessagesAPIStandIn
from tests.agents.test_agent import Recorder, config
from tests.pipeline.test_scheduler import (
    NAME,
    design_turns,
    iteration_turns,
    make_scenario,
    state_of,
    wait_for_phase,
)

NOW = 1_800_000_000.0  # the injected wall clock: 2027-01-15T08:00:00Z


class ParkedSleep:
    """The retry's sleep: records each wait and, once `hold` is set, blocks until `release`."""

    def __init__(self, *, hold: bool = False) -> None:
        self.waits: list[float] = []
        self.parked = anyio.Event()
        self.release = anyio.Event()
        if not hold:
            self.release.set()

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.parked.set()
        await self.release.wait()
        await checkpoint()


def retry(sleep: ParkedSleep) -> ModelRetry:
    return ModelRetry(sleep=sleep, wall_clock=lambda: NOW, rand=lambda: 0.0)


class Flush(BaseModel):
    """Asked last: answered once everything sent to the recorder before it is handled."""


class WaitRecorder(Recorder):
    """The Scheduler's stand-in, also keeping the rounds' waiting reports."""

    waits: list[RoundWaiting]

    @handler
    async def round_waiting(self, message: RoundWaiting) -> None:
        self.waits.append(message)

    @handler
    async def flush(self, message: Flush) -> None:
        return None


async def test_an_unavailable_model_parks_the_round_and_retries_without_a_restart(
    tmp_path: Path,
) -> None:
    """Five 503s use up the SDK's retries; the agent logs `agent.model_unavailable`, tells the
    Scheduler when it retries, waits the backoff, calls again and finishes the round: no
    handler failure, no restart, and the wait is reported over."""
    WaitRecorder.waits = []
    sleep = ParkedSleep()
    async with MessagesAPIStandIn() as api, api.model("claude-opus-4-5") as model:
        api.fail(503, times=5)
        api.reply("Designed.")
        async with Runtime.open(tmp_path) as rt:
            await rt.spawn("scheduler", WaitRecorder, [], [])
            setup = agent_setup(
                "init",
                config(),
                workspace=tmp_path,
                model=model,
                journal=FileJournalStore(tmp_path),
                token_log=rt.token_log,
            )
            await rt.spawn("init", InitActor, dataclasses.replace(setup, model_retry=retry(sleep)))
            order = Dispatch(
                scenario=NAME, agent_context=AgentContext(task_summary="t"), dispatch_id="mini#1"
            )
            with capture_logs() as logs:
                assert "Designed." == await rt.ask("init", order)
            init = next(s for s in rt.status() if s.name == "init")
            await rt.ask("scheduler", Flush())
        statuses = [r.status for r in api.requests_to("messages")]
    assert (0, 0, "running") == (init.failures, init.restarts, init.state)
    assert [503] * 5 + [200] == statuses
    assert [5.0] == sleep.waits
    retry_at = datetime.fromtimestamp(NOW + 5.0, UTC)
    assert [("API answered HTTP 503 api_error", retry_at, "mini#1"), (None, None, "mini#1")] == [
        (w.reason, w.retry_at, w.dispatch_id) for w in WaitRecorder.waits
    ]
    (unavailable,) = [line for line in logs if line["event"] == "agent.model_unavailable"]
    assert (retry_at.isoformat(timespec="seconds"), 1) == (
        unavailable["retry_at"],
        unavailable["failures"],
    )


async def test_an_unreachable_api_is_named_as_such() -> None:
    """A call to a closed port fails as a `ModelCallFailure` whose waiting reason is
    `API unreachable`."""
    payload = {"max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    async with AnthropicModel(
        "claude-opus-4-5", api_key="x", base_url="http://127.0.0.1:9", max_retries=0
    ) as model:
        with pytest.raises(ModelCallFailure) as failed:
            await model.create(payload)
    assert "API unreachable" == unavailable_reason(failed.value)


LIKE_OFFLINE = "".join(
    f'[actors.{actor}]\nmodel = "claude-opus-4-5"\nthinking = "off"\n'
    for actor in ("init", "execute", "scheduler")
)


async def test_an_api_outage_leaves_the_scenario_waiting_not_the_scheduler_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's outage through the real SDK: the Scheduler writes its task summary without
    the model, Init parks its round; the scenario shows `waiting: ..., retrying at HH:MM:SS`,
    a second submit answers its state, nothing restarts, and once the API answers again the
    scenario goes on to the approval gate."""
    make_scenario(tmp_path, init=design_turns(1), execute=iteration_turns(1, 3, complete=True))
    (tmp_path / "baton.toml").write_text(LIKE_OFFLINE, encoding="utf-8")
    sleep = ParkedSleep(hold=True)
    async with MessagesAPIStandIn(model=OfflineModel(tmp_path)) as api:
        for key, value in api.env().items():
            monkeypatch.setenv(key, value)
        # The Scheduler's summary call uses up five (1 + the SDK's 4 retries), Init's the rest.
        api.fail(503, times=10)
        async with (
            Runtime.open(tmp_path) as rt,
            open_pipeline(rt, environ=api.env(), model_retry=retry(sleep)),
        ):
            first = await rt.ask("scheduler", StartScenario(scenario=NAME))
            await sleep.parked.wait()
            waiting = await state_of(rt)
            again = await rt.ask("scheduler", StartScenario(scenario=NAME))
            sleep.release.set()
            done = await wait_for_phase(rt, "awaiting_approval", "failed")
            statuses = {s.name: (s.state, s.restarts, s.failures) for s in rt.status()}
    assert (True, "designing") == (first.started, first.phase)
    assert "designing" == waiting.phase
    assert waiting.waiting is not None
    assert re.fullmatch(
        r"waiting: init: API answered HTTP 503 api_error, retrying at \d\d:\d\d:\d\d",
        waiting.waiting,
    )
    assert (False, "designing") == (again.started, again.phase)
    assert ("awaiting_approval", None) == (done.phase, done.waiting)
    assert dict.fromkeys(("scheduler", "init", "execute"), ("running", 0, 0)) == statuses
