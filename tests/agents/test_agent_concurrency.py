"""Agents keyed by conversation: two scenarios submitted at once run their rounds at once."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from baton import Runtime
from baton.context.payload import Payload
from baton.errors import ConfigError
from baton.models.protocol import current_call
from baton.pipeline.config import parse_config
from baton.pipeline.host import open_pipeline
from baton.pipeline.messages import ScenarioQuery, StartScenario
from baton.pipeline.offline_model import OfflineModel
from baton.pipeline.scenario_state import ScenarioState

ROOT = Path(__file__).resolve().parents[2]
FIRST = "leave_application"
SECOND = "leave_copy"


def add_scenario(ws: Path, name: str) -> None:
    """The shipped scenario under `name`: its script and config, with every path renamed."""
    source = ROOT / "scenarios" / FIRST
    folder = ws / "scenarios" / name
    folder.mkdir(parents=True)
    for file in ("offline_script.json", "scenario.toml"):
        text = (source / file).read_text(encoding="utf-8")
        (folder / file).write_text(text.replace(FIRST, name), encoding="utf-8")


def outputs(ws: Path, name: str) -> dict[str, bytes]:
    """What the scenario wrote, with its own name put back to the first's, to compare runs."""
    folder = ws / "scenarios" / name
    files = sorted(folder.glob("execution_outputs/**/*.json"))
    files += [folder / n for n in ("unified_scenario_design.yaml", "BusinessRules.md")]
    return {
        str(p.relative_to(folder)): p.read_bytes().replace(name.encode(), FIRST.encode())
        for p in files
    }


class Overlap:
    """Wraps the offline model: records which conversations each agent has a call in flight
    for, and holds each scenario's first call to an agent until the other scenario's first
    call to it has begun (never, if the agent ran one conversation at a time)."""

    def __init__(self, scenarios: int) -> None:
        self.scenarios = scenarios
        self.first_calls: dict[str, set[str]] = {}
        self.everyone_in: dict[str, anyio.Event] = {}
        self.in_flight: dict[str, set[str]] = {}
        self.most_in_flight: dict[str, int] = {}

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        original = OfflineModel.create

        async def create(model: OfflineModel, payload: Payload) -> object:
            call = current_call()
            assert call is not None
            flight = self.in_flight.setdefault(call.actor, set())
            flight.add(call.conversation)
            most = max(self.most_in_flight.get(call.actor, 0), len(flight))
            self.most_in_flight[call.actor] = most
            try:
                arrived = self.first_calls.setdefault(call.actor, set())
                everyone = self.everyone_in.setdefault(call.actor, anyio.Event())
                if call.actor in ("init", "execute") and call.scenario not in arrived:
                    arrived.add(str(call.scenario))
                    if len(arrived) == self.scenarios:
                        everyone.set()
                    with anyio.fail_after(60):
                        await everyone.wait()
                return await original(model, payload)
            finally:
                flight.discard(call.conversation)

        monkeypatch.setattr(OfflineModel, "create", create)


async def run(ws: Path, names: list[str]) -> dict[str, ScenarioState]:
    """Submit every scenario at once (auto-approved) and wait until all have ended."""
    async with Runtime.open(ws) as rt, open_pipeline(rt, environ={}):
        for name in names:
            await rt.ask("scheduler", StartScenario(scenario=name, auto_approve=True))
        states: dict[str, ScenarioState] = {}
        async with rt.token_log.follow() as records:
            with anyio.fail_after(300):
                while True:
                    for name in names:
                        state = await rt.ask("scheduler", ScenarioQuery(scenario=name))
                        assert isinstance(state, ScenarioState)
                        states[name] = state
                    if any(s.phase not in ("completed", "failed") for s in states.values()):
                        await records.receive()  # progress is made one logged event at a time
                    elif all(not s.busy and s.mailbox_depth == 0 for s in rt.status()):
                        break
                    else:
                        await anyio.wait_all_tasks_blocked()
    return states


async def test_two_scenarios_run_their_rounds_at_once_with_the_artifacts_of_one_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Submitted together, two scenarios' rounds overlap in Init and in Execute (each one's
    first model call waits for the other's), both complete, and each writes what the
    scenario writes when it runs alone."""
    alone = tmp_path / "alone"
    add_scenario(alone, FIRST)
    states = await run(alone, [FIRST])
    assert ("completed", 2) == (states[FIRST].phase, states[FIRST].iteration)

    together = tmp_path / "together"
    add_scenario(together, FIRST)
    add_scenario(together, SECOND)
    overlap = Overlap(scenarios=2)
    overlap.install(monkeypatch)
    states = await run(together, [FIRST, SECOND])
    assert [("completed", 2), ("completed", 2)] == [
        (states[n].phase, states[n].iteration) for n in (FIRST, SECOND)
    ]
    assert {"init": 2, "execute": 2} == {
        actor: overlap.most_in_flight[actor] for actor in ("init", "execute")
    }
    assert outputs(alone, FIRST) == outputs(together, FIRST)
    assert outputs(alone, FIRST) == outputs(together, SECOND)


async def test_an_agents_concurrent_conversations_come_from_its_config(tmp_path: Path) -> None:
    """`[actors.execute] max_concurrent_keys` sets how many conversations Execute works on
    at once (default 8); a value below 1 is refused with the key named."""
    (tmp_path / "baton.toml").write_text("[actors.execute]\nmax_concurrent_keys = 3\n")
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        cells = rt._cells
        limits = {n: cells[n].instance.actor_max_concurrent_keys for n in ("init", "execute")}
        assert {"init": 8, "execute": 3} == limits
    with pytest.raises(ConfigError, match=r"actors\.execute\.max_concurrent_keys"):
        parse_config({"actors": {"execute": {"model": "m", "max_concurrent_keys": 0}}})
