"""The spend cap (`[scenario] max_cost_usd`): a run stops cleanly at it and resumes once the
cap is raised, ending with what an uncapped run writes; every call counts against it, so a
cap over a model without a price is refused before anything runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from baton import Runtime
from baton.errors import ConfigError
from baton.pipeline.host import open_pipeline
from baton.pipeline.messages import ScenarioQuery, StartScenario
from baton.pipeline.offline_model import OfflineModel
from baton.pipeline.scenario_state import ScenarioState
from baton.server._render import cost_figure
from baton.server._run_summary import RunTally, summary_lines
from baton.testing import MessagesAPIStandIn, read_token_log
from tests.pipeline.test_scheduler import BASE, NAME, design_turns, iteration_turns, make_scenario

# The offline model costs nothing by default; this makes every call cost something
# (README.md, "Configuration", `[prices]`).
PRICED = """
[prices."offline-scripted"]
input = 1000.0
output = 1000.0
cache_write_5m = 1000.0
cache_read = 100.0
"""


def scripted(workspace: Path, cap: float | None = None) -> None:
    """The two-iteration scenario of the Scheduler's tests, priced, with `cap` if given."""
    make_scenario(
        workspace,
        init=design_turns(1) + design_turns(2),
        execute=iteration_turns(1, 1, complete=False) + iteration_turns(2, 3, complete=True),
        auto_approve=True,
    )
    (workspace / "baton.toml").write_text(PRICED)
    if cap is not None:
        set_cap(workspace, cap)


def set_cap(workspace: Path, cap: float) -> None:
    path = workspace / BASE / "scenario.toml"
    kept = path.read_text().split("\n[scenario]")[0]
    path.write_text(f"{kept}\n[scenario]\nmax_cost_usd = {cap}\n")


async def wait_for(rt: Runtime, *phases: str) -> ScenarioState:
    with anyio.fail_after(30):
        while True:
            state = await rt.ask("scheduler", ScenarioQuery(scenario=NAME))
            if isinstance(state, ScenarioState) and state.phase in phases:
                return state
            await anyio.wait_all_tasks_blocked()


def artifacts(workspace: Path) -> dict[str, str]:
    folder = workspace / BASE
    return {
        str(path.relative_to(folder)): path.read_text()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name not in ("scenario.toml", "script.json")
    }


def calls(workspace: Path) -> list[dict[str, Any]]:
    return [e for e in read_token_log(workspace) if e["event"] == "model.call"]


def spent(workspace: Path) -> float:
    return sum(float(call["cost_usd"]) for call in calls(workspace))


async def settled(rt: Runtime) -> ScenarioState:
    """The scenario's state once no actor has work left: an agent's round goes on past the
    handoff that ends its scenario (it answers the tool once more), and that call costs too."""
    with anyio.fail_after(30):
        while any(s.mailbox_depth or s.working_on for s in rt.status()):
            await anyio.wait_all_tasks_blocked()
    state = await rt.ask("scheduler", ScenarioQuery(scenario=NAME))
    assert isinstance(state, ScenarioState)
    return state


async def uncapped_run(workspace: Path) -> ScenarioState:
    scripted(workspace)
    async with Runtime.open(workspace) as rt, open_pipeline(rt, environ={}):
        await rt.ask("scheduler", StartScenario(scenario=NAME))
        await wait_for(rt, "completed", "failed", "stopped")
        return await settled(rt)


async def test_every_model_call_carries_its_cost_and_the_state_sums_them(tmp_path: Path) -> None:
    """Each `model.call` has `cost_usd` from the configured prices; the state sums them."""
    done = await uncapped_run(tmp_path)
    costs = [call["cost_usd"] for call in calls(tmp_path)]
    assert "completed" == done.phase
    assert all(isinstance(cost, float) and cost > 0 for cost in costs)
    assert done.cost_usd == pytest.approx(sum(costs))
    assert done.max_cost_usd is None


async def test_a_run_stops_at_its_cap_and_resumes_to_the_same_end(tmp_path: Path) -> None:
    """Stopped at its cap mid-run, a raised cap and a submit finish it as an uncapped run."""
    reference = tmp_path / "uncapped"
    reference.mkdir()
    await uncapped_run(reference)
    total = spent(reference)
    capped = tmp_path / "capped"
    capped.mkdir()
    scripted(capped, cap=round(total * 0.4, 4))
    async with Runtime.open(capped) as rt, open_pipeline(rt, environ={}):
        await rt.ask("scheduler", StartScenario(scenario=NAME))
        stopped = await wait_for(rt, "completed", "failed", "stopped")
        made = len(calls(capped))
        assert ("stopped", 0) == (stopped.phase, rt.dead_letters.total)
        assert stopped.reason is not None
        assert stopped.reason.startswith("budget: spent $")
        assert stopped.cost_usd is not None
        assert stopped.max_cost_usd is not None
        assert stopped.cost_usd >= stopped.max_cost_usd
        with pytest.raises(ConfigError, match="cap does not cover"):
            await rt.ask("scheduler", StartScenario(scenario=NAME))
    assert 0 < made < len(calls(reference))
    set_cap(capped, round(total * 2, 4))
    async with Runtime.open(capped) as rt, open_pipeline(rt, environ={}):
        assert made == len(calls(capped))  # restarted: still stopped, no call made
        resumed = await rt.ask("scheduler", StartScenario(scenario=NAME))
        assert resumed.phase in ("designing", "executing", "returned_to_init")
        done = await wait_for(rt, "completed", "failed", "stopped")
        assert 0 == rt.dead_letters.total
    assert ("completed", 2) == (done.phase, done.iteration)
    assert artifacts(reference) == artifacts(capped)
    assert len(calls(reference)) == len(calls(capped))
    # Not the uncapped total: the restart left the offline prompt cache cold.
    assert done.cost_usd == pytest.approx(spent(capped))


async def test_a_cap_from_baton_toml_applies_to_every_scenario(tmp_path: Path) -> None:
    """`[scenario] max_cost_usd` in baton.toml caps a scenario whose own file sets none."""
    scripted(tmp_path)
    with (tmp_path / "baton.toml").open("a") as config:
        config.write("\n[scenario]\nmax_cost_usd = 0.000001\n")
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        await rt.ask("scheduler", StartScenario(scenario=NAME))
        stopped = await wait_for(rt, "completed", "failed", "stopped")
    assert ("stopped", 0.000001) == (stopped.phase, stopped.max_cost_usd)


async def test_a_cap_that_is_not_a_positive_number_is_refused_at_submit(tmp_path: Path) -> None:
    """`max_cost_usd = 0` in scenario.toml is a ConfigError naming the key; nothing starts."""
    scripted(tmp_path, cap=0)
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        with pytest.raises(ConfigError, match="max_cost_usd"):
            await rt.ask("scheduler", StartScenario(scenario=NAME))
    assert [] == calls(tmp_path)


# Init and Execute on priced models with no thinking (the offline script's replies carry
# none); the Scheduler on its default, Claude Haiku 5.5.
ONLINE = "".join(
    f'[actors.{actor}]\nmodel = "claude-sonnet-5-5"\nthinking = "off"\n'
    for actor in ("init", "execute")
)


def online_scenario(workspace: Path, config: str) -> None:
    """The Scheduler tests' two-iteration scenario, for a run through the Messages API."""
    make_scenario(
        workspace,
        init=design_turns(1) + design_turns(2),
        execute=iteration_turns(1, 1, complete=False) + iteration_turns(2, 3, complete=True),
        auto_approve=True,
    )
    (workspace / "baton.toml").write_text(config)


async def test_a_run_whose_scheduler_uses_haiku_5_5_shows_its_cost_under_a_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the Messages API with the default Scheduler model (Haiku 5.5) and a $3.00 cap,
    every call has a cost: `baton status` shows `cost: $… of $3.00 cap`, not `—`, and the run
    summary's total carries no `*` for an unpriced model."""
    online_scenario(tmp_path, ONLINE + "[scenario]\nmax_cost_usd = 3.0\n")
    async with MessagesAPIStandIn(model=OfflineModel(tmp_path)) as api:
        for key, value in api.env().items():
            monkeypatch.setenv(key, value)
        async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ=api.env()):
            await rt.ask("scheduler", StartScenario(scenario=NAME))
            await wait_for(rt, "completed", "failed", "stopped")
            done = await settled(rt)
    haiku = [call for call in calls(tmp_path) if call["model"] == "claude-haiku-5-5"]
    tally = RunTally()
    for record in read_token_log(tmp_path):
        tally.add(record)
    summary = summary_lines(tally, [done], workspace=tmp_path)
    assert "completed" == done.phase
    assert {"scheduler"} == {call["actor"] for call in haiku}
    assert all(call["cost_usd"] > 0 for call in haiku)
    assert done.cost_usd == pytest.approx(spent(tmp_path))
    assert f"cost: ${done.cost_usd:.4f} of $3.00 cap" == cost_figure(done)
    assert [] == [line for line in summary if "*" in line]


async def test_a_cap_in_baton_toml_with_an_unpriced_model_is_refused_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[scenario] max_cost_usd` in baton.toml and a Scheduler on a model baton has no price
    for (Opus 4.5): the start stops with one line naming the model and the lines to add."""
    scheduler = '[actors.scheduler]\nmodel = "claude-opus-4-5"\nthinking = "off"\n'
    online_scenario(tmp_path, ONLINE + scheduler + "[scenario]\nmax_cost_usd = 3.0\n")
    async with MessagesAPIStandIn(model=OfflineModel(tmp_path)) as api:
        for key, value in api.env().items():
            monkeypatch.setenv(key, value)
        async with Runtime.open(tmp_path) as rt:
            with pytest.raises(ConfigError) as refused:
                async with open_pipeline(rt, environ=api.env()):
                    pass
            assert [] == [status.name for status in rt.status()]  # no agent was spawned
        assert [] == api.requests_to("messages")
    message = str(refused.value)
    assert "\n" not in message
    assert "max_cost_usd is set in baton.toml" in message
    assert "'claude-opus-4-5' (scheduler)" in message
    assert (
        '`[prices."claude-opus-4-5"]` `input = <USD per MTok>` `output = <USD per MTok>` '
        "`cache_read = <USD per MTok>`"
    ) in message


async def test_a_scenarios_own_cap_with_an_unpriced_model_is_refused_at_submit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cap only in the scenario's scenario.toml is refused at its submit (nothing runs);
    with the model priced in baton.toml, the same submit runs to its end."""
    scheduler = '[actors.scheduler]\nmodel = "claude-opus-4-5"\nthinking = "off"\n'
    online_scenario(tmp_path, ONLINE + scheduler)
    set_cap(tmp_path, 3.0)
    async with MessagesAPIStandIn(model=OfflineModel(tmp_path)) as api:
        for key, value in api.env().items():
            monkeypatch.setenv(key, value)
        async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ=api.env()):
            with pytest.raises(ConfigError, match=f"set in scenarios/{NAME}/scenario.toml"):
                await rt.ask("scheduler", StartScenario(scenario=NAME))
        assert [] == calls(tmp_path)
        with (tmp_path / "baton.toml").open("a") as config:
            config.write(
                '[prices."claude-opus-4-5"]\ninput = 5.0\noutput = 25.0\ncache_read = 0.5\n'
            )
        async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ=api.env()):
            await rt.ask("scheduler", StartScenario(scenario=NAME))
            await wait_for(rt, "completed", "failed", "stopped")
            done = await settled(rt)
    assert ("completed", 3.0) == (done.phase, done.max_cost_usd)
