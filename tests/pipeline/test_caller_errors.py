"""Errors that are the caller's are answered at once, in one line naming the file or field, and
cost no restart: bad budgets, bad scenario names, bad scenario.toml files; a refused submit
leaves no record behind."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from pydantic import ValidationError

from baton import Runtime
from baton.agents.agent_config import AgentConfig
from baton.agents.journal import FileJournalStore
from baton.errors import ConfigError
from baton.pipeline.agent_context import AgentContext
from baton.pipeline.defaults import role_budget
from baton.pipeline.errors import InvalidScenarioNameError
from baton.pipeline.host import open_pipeline
from baton.pipeline.messages import Dispatch, ScenarioQuery, StartScenario
from baton.pipeline.offline_model import OfflineModel
from baton.pipeline.roles import InitActor, agent_setup
from baton.pipeline.scenario_names import check_scenario_name
from baton.pipeline.scheduler import SchedulerActor
from baton.server import create_control_app
from tests.agents.test_agent import config, scripted, spawn_init_beside_recorder
from tests.pipeline.test_scheduler import (
    NAME,
    design_turns,
    iteration_turns,
    make_scenario,
    wait_for_phase,
)

BAD_NAMES = ["..", ".", "_x", "-x", "a" * 121, "a/b", "a@2", ""]


def restarts(rt: Runtime) -> dict[str, int]:
    return {s.name: s.restarts for s in rt.status()}


def test_a_work_order_whose_budget_breaks_its_own_bounds_cannot_be_built() -> None:
    """`Dispatch.budget` with `context_window = -5` or an unknown key is refused by the
    message type itself, so every boundary that validates a message refuses it before it is
    queued (the control API answers 422 for a tell as for an ask)."""
    with pytest.raises(ValidationError) as refused:
        Dispatch(
            scenario="zz",
            agent_context=AgentContext(task_summary="t"),
            budget={"context_window": -5, "windw": 1},
        )
    problems = {(".".join(map(str, e["loc"])), e["type"]) for e in refused.value.errors()}
    assert {
        ("budget.context_window", "greater_than"),
        ("budget.windw", "extra_forbidden"),
    } == problems


async def test_a_work_order_with_a_bad_budget_is_refused_without_a_restart(
    tmp_path: Path,
) -> None:
    """`Dispatch.budget` whose keys are each fine but which Init's own budget cannot take (a
    threshold above its window), asked once and told twice: a `ConfigError` naming
    `compact_threshold` for the asker, the same reason on the two told ones' dead letters, no
    model call and no restart."""
    model = scripted([])
    async with Runtime.open(tmp_path) as rt:
        await spawn_init_beside_recorder(rt, model, FileJournalStore(tmp_path), [], [])
        order = Dispatch(
            scenario="zz",
            agent_context=AgentContext(task_summary="t"),
            budget={"compact_threshold": 5_000_000},
        )
        await rt.tell("init", order)
        await rt.tell("init", order)
        with pytest.raises(ConfigError) as refused:
            await rt.ask("init", order)  # answered after the two told before it
        init = next(s for s in rt.status() if s.name == "init")
        reasons = [letter.reason for letter in rt.dead_letters]
    message = str(refused.value)
    assert 1 == len(message.splitlines())
    assert "compact_threshold (5000000) must be below context_window" in message
    assert (0, 0, "running") == (init.restarts, init.failures, init.state)
    assert 2 == len(reasons)
    assert all("compact_threshold (5000000)" in reason for reason in reasons)
    assert [] == list(model.calls)


async def test_a_work_order_the_agent_refuses_ends_the_scenario_instead_of_a_hang(
    tmp_path: Path,
) -> None:
    """Overrides the Scheduler accepts (its budgets) but Init's own budget cannot take (a
    threshold above Init's window): Init refuses the order, and the scenario ends `failed`
    naming the key rather than staying `designing` for ever."""
    make_scenario(tmp_path, init=design_turns(1), execute=[])
    with (tmp_path / "scenarios" / NAME / "scenario.toml").open("a") as toml:
        toml.write("[actors.init]\ncompact_threshold = 500000\n")
    model = OfflineModel(tmp_path)
    journal = FileJournalStore(tmp_path)
    async with Runtime.open(tmp_path) as rt:
        summaries = agent_setup(
            "scheduler",
            AgentConfig.model_validate({**config().model_dump(), "context_window": 1_000_000}),
            workspace=tmp_path,
            model=model,
            journal=journal,
            token_log=rt.token_log,
        )
        budgets = {role: role_budget(role) for role in ("init", "execute")}
        await rt.spawn(
            "scheduler",
            SchedulerActor,
            dataclasses.replace(summaries, purpose="task_summary"),
            tmp_path,
            budgets=budgets,
        )
        init = agent_setup(
            "init",
            config(),
            workspace=tmp_path,
            model=model,
            journal=journal,
            token_log=rt.token_log,
        )
        await rt.spawn("init", InitActor, init)
        await rt.ask("scheduler", StartScenario(scenario=NAME))
        done = await wait_for_phase(rt, "failed", "awaiting_approval")
        counts = restarts(rt)
    assert "failed" == done.phase
    assert done.reason is not None
    assert done.reason.startswith(f"init refused work order {NAME}#1: ConfigError: ")
    assert "compact_threshold (500000) must be below context_window (200000)" in done.reason
    assert {"scheduler": 0, "init": 0} == counts


BAD_TOMLS = [
    ("[actors.init]\ncontext_windw = 1\n", "unknown key 'actors.init.context_windw'"),
    (
        "[actors.init]\ncontext_window = -1\n",
        "actors.init.context_window: Input should be greater than 0",
    ),
    (
        "[actors.execute]\ncompact_threshold = 1000000\n",
        "actors.execute: Value error, compact_threshold (1000000) must be below "
        "context_window (1000000)",
    ),
    (
        "[actors.init]\ncontext_window = 'big'\n",
        "actors.init.context_window: Input should be a valid integer",
    ),
    ("[actors.critic]\ncontext_window = 1000\n", "unknown key 'actors.critic'"),
    # make_scenario's file ends in its [policy] table: these two land there.
    ("colour = 'red'\n", "unknown key 'policy.colour'"),
    ("success_threshold = 'high'\n", "policy.success_threshold: Input should be a valid number"),
]


@pytest.mark.parametrize(("extra", "named"), BAD_TOMLS)
async def test_a_bad_scenario_toml_is_refused_at_submit(
    tmp_path: Path, extra: str, named: str
) -> None:
    """Bad or unknown keys in scenario.toml (budgets checked against the agents' own) refuse
    the submit in one line naming the file and the key, as strictly as baton.toml: no
    record, no work order, no restart."""
    make_scenario(tmp_path, init=design_turns(1), execute=[])
    path = tmp_path / "scenarios" / NAME / "scenario.toml"
    with path.open("a") as toml:
        toml.write(extra)
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        with pytest.raises(ConfigError) as refused:
            await rt.ask("scheduler", StartScenario(scenario=NAME))
        known = await rt.ask("scheduler", ScenarioQuery())
        counts = restarts(rt)
    message = str(refused.value)
    assert 1 == len(message.splitlines())
    assert f"invalid configuration in {path}: " in message
    assert named in message
    assert [] == known
    assert {"scheduler": 0, "init": 0, "execute": 0} == counts
    assert not (tmp_path / ".baton" / "journal" / "init").exists()


@pytest.mark.parametrize(
    ("content", "named"),
    [
        (b'requirement = "\xff\xfe"\n', "is not UTF-8 text (byte 0xff at offset 15)"),
        (b"requirement = \n", "is not valid TOML"),
    ],
)
async def test_an_unreadable_scenario_toml_is_refused_naming_the_file(
    tmp_path: Path, content: bytes, named: str
) -> None:
    """A scenario.toml that is not UTF-8 or not TOML: one line naming the file and what is
    wrong, answered at once (no restart), with or without `--requirement`."""
    make_scenario(tmp_path, init=design_turns(1), execute=[])
    path = tmp_path / "scenarios" / NAME / "scenario.toml"
    path.write_bytes(content)
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        errors = []
        for requirement in (None, "r"):
            with pytest.raises(ConfigError) as refused:
                await rt.ask("scheduler", StartScenario(scenario=NAME, requirement=requirement))
            errors.append(str(refused.value))
        counts = restarts(rt)
    assert all(message.startswith(f"{path} {named}") for message in errors)
    assert all(1 == len(message.splitlines()) for message in errors)
    assert {"scheduler": 0, "init": 0, "execute": 0} == counts


@pytest.mark.parametrize("name", BAD_NAMES)
def test_one_rule_for_scenario_names_says_what_it_is(name: str) -> None:
    """Every bad name is refused by the one check, with the rule it breaks spelt out; the
    messages that carry a scenario refuse it the same way."""
    with pytest.raises(InvalidScenarioNameError) as refused:
        check_scenario_name(name)
    message = str(refused.value)
    assert "is not allowed: it " in message
    assert (
        "a scenario name is 1 to 120 characters, starts with a letter or a digit and goes on "
        "with letters, digits, '_', '-' or '.'"
    ) in message
    with pytest.raises(ValidationError, match="starts with a letter or a digit"):
        StartScenario(scenario=name)
    with pytest.raises(ValidationError, match="starts with a letter or a digit"):
        Dispatch(scenario=name, agent_context=AgentContext(task_summary="t"))


@pytest.mark.parametrize("name", ["leave_application", "a", "x.y-z_2", "a" * 120])
def test_good_scenario_names_pass(name: str) -> None:
    """Names that follow the rule pass unchanged."""
    assert name == check_scenario_name(name)


@asynccontextmanager
async def control(rt: Runtime) -> AsyncIterator[httpx2.AsyncClient]:
    app = create_control_app(rt, on_stop=lambda: None)
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://baton") as http:
        yield http


async def test_a_refused_submit_creates_no_phantom_scenario(tmp_path: Path) -> None:
    """`POST /scenarios` with `..`, `.`, `_x`, `-x` or a 300-character name, with a
    requirement, is refused naming the rule, and `GET /scenarios` lists nothing; a good
    name then starts normally."""
    make_scenario(tmp_path, init=design_turns(1), execute=iteration_turns(1, 3, complete=True))
    async with (
        Runtime.open(tmp_path) as rt,
        open_pipeline(rt, environ={}),
        control(rt) as http,
    ):
        refusals = []
        for name in ["..", ".", "_x", "-x", "x" * 300]:
            answer = await http.post("/scenarios", json={"scenario": name, "requirement": "r"})
            refusals.append((answer.status_code, answer.json()["error"]["message"]))
        listed = (await http.get("/scenarios")).json()
        started = (await http.post("/scenarios", json={"scenario": NAME})).json()
        counts = restarts(rt)
    assert all(400 <= status < 500 for status, _ in refusals)
    assert all("starts with a letter or a digit" in message for _, message in refusals)
    assert [] == listed
    assert (NAME, True) == (started["scenario"], started["started"])
    assert {"scheduler": 0, "init": 0, "execute": 0} == counts
