"""`baton new`'s scenario folder: it passes the submit-time check, names every key with true
defaults, wires its prompts, refuses an existing folder or a bad name, and reaches Init."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import anyio
import pytest

from baton import Runtime
from baton.pipeline.defaults import DEFAULT_BUDGETS
from baton.pipeline.errors import InvalidScenarioNameError, ScenarioExistsError
from baton.pipeline.host import open_pipeline
from baton.pipeline.messages import ScenarioQuery, StartScenario
from baton.pipeline.roles import shipped_prompt
from baton.pipeline.scenario import IterationPolicy, ScenarioConfig, load_scenario
from baton.pipeline.scenario_scaffold import ROLES, new_scenario
from baton.pipeline.scenario_state import ScenarioState
from baton.pipeline.scheduler import default_budgets

NAME = "my_task"
COMMENTED_SETTING = re.compile(r"^# (\[[a-z_.]+\]|[a-z_]+ = .+)$")


def uncommented(text: str) -> str:
    """The file with every commented-out setting and table header switched on."""
    lines = text.splitlines()
    return "\n".join(
        match.group(1) if (match := COMMENTED_SETTING.match(line)) else line for line in lines
    )


def test_a_new_scenario_passes_the_submit_time_check(tmp_path: Path) -> None:
    """The scaffold loads as a submit loads it (budgets checked) and gets the defaults."""
    new_scenario(tmp_path, NAME)
    config = load_scenario(tmp_path, NAME, default_budgets())
    assert (NAME, False, None) == (config.name, config.auto_approve, config.offline_script)
    assert IterationPolicy() == config.policy
    assert {} == config.actors
    assert f"scenarios/{NAME}/inputs/" in config.requirement


def test_every_commented_default_is_valid_and_is_the_default(tmp_path: Path) -> None:
    """Switching every commented setting on still passes the check and changes nothing that
    the comments call a default: the budgets are the built-in ones."""
    scaffold = new_scenario(tmp_path, NAME)
    path = tmp_path / scaffold.folder / "scenario.toml"
    path.write_text(uncommented(path.read_text(encoding="utf-8")), encoding="utf-8")
    config = load_scenario(tmp_path, NAME, default_budgets())
    assert "offline_script.json" == config.offline_script
    for role in ("init", "execute"):
        assert DEFAULT_BUDGETS[role] == config.actors[role]


def test_the_scaffold_names_every_scenario_key(tmp_path: Path) -> None:
    """Each key a scenario.toml takes appears in the scaffold, set or commented out (the
    folder name is the scenario's name, so `name` is left out)."""
    scaffold = new_scenario(tmp_path, NAME)
    text = uncommented((tmp_path / scaffold.folder / "scenario.toml").read_text("utf-8"))
    data = tomllib.loads(text)
    assert set(ScenarioConfig.model_fields) - {"name"} == set(data)
    assert set(IterationPolicy.model_fields) == set(data["policy"])


def test_the_prompts_are_the_shipped_ones_and_are_used(tmp_path: Path) -> None:
    """`prompts/<role>.md` holds each role's shipped prompt, where a scenario's own prompts
    are looked up; `inputs/` holds only its README."""
    scaffold = new_scenario(tmp_path, NAME)
    folder = tmp_path / scaffold.folder
    for role in ROLES:
        assert shipped_prompt(role) == (folder / "prompts" / f"{role}.md").read_text("utf-8")
    assert ["README.md"] == [p.name for p in (folder / "inputs").iterdir()]
    assert {str(p) for p in scaffold.files} == {
        str(p.relative_to(tmp_path)) for p in folder.rglob("*") if p.is_file()
    }


def test_an_existing_folder_is_refused_and_left_alone(tmp_path: Path) -> None:
    """A second `new` of the same name raises and does not touch what is there."""
    scaffold = new_scenario(tmp_path, NAME)
    toml = tmp_path / scaffold.folder / "scenario.toml"
    toml.write_text('requirement = "mine"\n', encoding="utf-8")
    with pytest.raises(ScenarioExistsError, match="already exists"):
        new_scenario(tmp_path, NAME)
    assert 'requirement = "mine"\n' == toml.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["_x", "-x", "..", "a/b", "", "x" * 121])
def test_a_bad_name_is_refused_before_anything_is_written(tmp_path: Path, name: str) -> None:
    """A name that breaks the scenario-name rule raises and creates no folder."""
    with pytest.raises(InvalidScenarioNameError, match="is not allowed"):
        new_scenario(tmp_path, name)
    assert [] == list(tmp_path.iterdir())


async def test_a_new_scenario_reaches_init_with_its_own_prompt(tmp_path: Path) -> None:
    """Submitted as it is, the scenario starts and Init is called with the scenario's
    edited `prompts/init.md` (offline: the fixed reply, so it then fails by reminders)."""
    scaffold = new_scenario(tmp_path, NAME)
    prompt = tmp_path / scaffold.folder / "prompts" / "init.md"
    prompt.write_text("MARKER: the edited Init prompt.\n", encoding="utf-8")
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}) as pipeline:
        started = await rt.ask("scheduler", StartScenario(scenario=NAME))
        assert (True, "designing") == (started.started, started.phase)
        with anyio.fail_after(20):
            while True:
                state = await rt.ask("scheduler", ScenarioQuery(scenario=NAME))
                assert isinstance(state, ScenarioState)
                if state.phase in ("completed", "failed"):
                    break
                await anyio.wait_all_tasks_blocked()
        assert pipeline.offline is not None
        init_calls = [c for c in pipeline.offline.calls if c.context.actor == "init"]
    assert "failed" == state.phase
    assert init_calls
    assert {NAME} == {c.context.scenario for c in init_calls}
    assert all("MARKER: the edited Init prompt." in str(c.payload["system"]) for c in init_calls)
