"""Where `Write` may write: the scenario's own folder and configured paths, never code or config
(docs/handoffs.md, "Sandbox")."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from baton import Actor, Runtime, handler
from baton.agents.agent_config import AgentConfig
from baton.agents.journal import FileJournalStore
from baton.agents.messages import Prompt
from baton.agents.tools import Sandbox, Toolbox, Write, scenario_scope
from baton.context.payload import ToolUseBlock
from baton.errors import ConfigError
from baton.models.scripted import Script, ScriptedModel
from baton.pipeline.agent_context import AgentContext
from baton.pipeline.config import load_config
from baton.pipeline.defaults import DEFAULT_AGENTS
from baton.pipeline.messages import Dispatch, HandoffDelivered, RoundEnded
from baton.pipeline.roles import ExecuteActor, agent_setup

REFUSED = [
    ".venv/lib/python3.11/site-packages/zz.pth",
    ".git/hooks/pre-commit",
    "baton.toml",
    "notes/todo.md",
    "scenarios/other/BusinessRules.md",
]
ALLOWED = "scenarios/leave/BusinessRules.md"


class Scheduler(Actor):
    """Stands in for the Scheduler: takes the round's end report and forgets it."""

    @handler
    async def round_ended(self, message: RoundEnded) -> None:
        pass

    @handler
    async def delivered(self, message: HandoffDelivered) -> None:
        pass


def config() -> AgentConfig:
    return AgentConfig.model_validate(DEFAULT_AGENTS["execute"])


def writes(*paths: str) -> dict[str, Any]:
    return {
        "tool_use": [
            {"name": "Write", "input": {"path": path, "content": "import os\n"}} for path in paths
        ]
    }


async def run_execute(
    workspace: Path, turns: list[Any], message: Any, *, write_paths: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """Run one `execute` round opened by `message`; the tool results of its first step."""
    model = ScriptedModel(Script.model_validate({"actors": {"execute": turns}}))
    journal = FileJournalStore(workspace)
    async with Runtime.open(workspace) as rt:
        await rt.spawn("scheduler", Scheduler)
        setup = agent_setup(
            "execute",
            config(),
            workspace=workspace,
            model=model,
            journal=journal,
            token_log=rt.token_log,
            write_paths=write_paths,
        )
        await rt.spawn("execute", ExecuteActor, setup)
        await rt.ask("execute", message)
    conversation = message.conversation_id if isinstance(message, Dispatch) else "main"
    records = await journal.read("execute", conversation)
    step = next(r["step"] for r in records if r["type"] == "step")
    results: list[dict[str, Any]] = step["results"]
    return results


def dispatch(scenario: str = "leave") -> Dispatch:
    return Dispatch(scenario=scenario, agent_context=AgentContext(task_summary="run it"))


async def test_an_agent_writes_only_under_its_scenario_folder(tmp_path: Path) -> None:
    """In scenario `leave`, a .pth in the venv, a git hook, baton.toml, the root and another
    scenario are refused with an error naming where to write; scenarios/leave/ is written."""
    results = await run_execute(tmp_path, [writes(*REFUSED, ALLOWED), "done"], dispatch())
    assert [True] * len(REFUSED) + [False] == [bool(r.get("is_error")) for r in results]
    assert all("scenarios/leave/" in r["content"] for r in results[: len(REFUSED)])
    assert [False] * len(REFUSED) == [(tmp_path / path).exists() for path in REFUSED]
    assert "import os\n" == (tmp_path / ALLOWED).read_text(encoding="utf-8")


async def test_the_main_conversation_writes_only_to_configured_paths(tmp_path: Path) -> None:
    """`main` belongs to no scenario: without write_paths every Write is refused (saying how
    to allow one); with `notes/` configured, notes/ is writable and the rest still is not."""
    refused = await run_execute(tmp_path, [writes("notes/a.md"), "done"], Prompt(text="go"))
    assert (True, False) == (bool(refused[0].get("is_error")), (tmp_path / "notes/a.md").exists())
    assert "[sandbox] write_paths" in refused[0]["content"]
    results = await run_execute(
        tmp_path / "second",
        [writes("notes/a.md", ALLOWED), "done"],
        Prompt(text="go"),
        write_paths=("notes/",),
    )
    assert [False, True] == [bool(r.get("is_error")) for r in results]
    assert (True, False) == (
        (tmp_path / "second/notes/a.md").is_file(),
        (tmp_path / "second" / ALLOWED).exists(),
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "scenarios/leave").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / ".venv/lib").mkdir(parents=True)
    return root


async def write(sandbox: Sandbox, path: str, scenario: str | None = "leave") -> str | None:
    """The error text of a Write of `path` in `scenario`, or None when it was written."""
    block: ToolUseBlock = {
        "type": "tool_use",
        "id": "t1",
        "name": "Write",
        "input": {"path": path, "content": "x\n"},
    }
    with scenario_scope(scenario):
        outcome = await Toolbox([Write(sandbox)]).run(block)
    return outcome.content if outcome.is_error else None


@pytest.mark.parametrize(
    "path",
    [
        "notes/zz.pth",
        "notes/sub/evil.PTH",
        "notes/.git/hooks/post-checkout",
        "notes/.venv/bin/activate",
        "notes/baton.toml",
        "scenarios/leave/.venv/lib/site.pth",
        "scenarios/leave/.baton/x",
        "scenarios/leave/scenario.toml",
        "scenarios/leave/prompts/execute.md",
        "scenarios/leave/runs/1/BusinessRules.md",
    ],
)
async def test_code_and_config_are_refused_even_inside_allowed_folders(
    workspace: Path, path: str
) -> None:
    """*.pth, .git/, .venv/, .baton/ and baton.toml are refused wherever they appear, and so
    are a scenario's own inputs (scenario.toml, prompts/) and its earlier runs (runs/)."""
    error = await write(Sandbox(workspace, write_paths=("notes/",)), path)
    assert "never" in (error or "")
    assert not (workspace / path).exists()


async def test_links_that_leave_the_allowed_tree_are_refused(workspace: Path) -> None:
    """A link in the scenario folder to the venv, to another workspace folder, or dangling
    towards baton.toml, is refused: the target, not the spelling, decides."""
    folder = workspace / "scenarios/leave"
    os.symlink(workspace / ".venv/lib", folder / "lib")
    os.symlink(workspace / "docs", folder / "docs")
    os.symlink(workspace / "baton.toml", folder / "settings.toml")
    sandbox = Sandbox(workspace)
    errors = [
        await write(sandbox, path)
        for path in (
            "scenarios/leave/lib/x.py",
            "scenarios/leave/docs/a.md",
            "scenarios/leave/settings.toml",
        )
    ]
    assert [True, True, True] == [e is not None for e in errors]
    assert ([], [], False) == (
        os.listdir(workspace / ".venv/lib"),
        os.listdir(workspace / "docs"),
        (workspace / "baton.toml").exists(),
    )


async def test_a_link_inside_the_allowed_tree_is_followed(workspace: Path) -> None:
    """A link from one place of the scenario folder to another is written through."""
    (workspace / "scenarios/leave/current").mkdir()
    os.symlink(workspace / "scenarios/leave/current", workspace / "scenarios/leave/latest")
    assert None is await write(Sandbox(workspace), "scenarios/leave/latest/a.md")
    assert (workspace / "scenarios/leave/current/a.md").is_file()


@pytest.mark.parametrize("scenario", ["..", ".", "", "a/b"])
async def test_a_scenario_name_that_is_not_a_folder_name_allows_nothing(
    workspace: Path, scenario: str
) -> None:
    """A conversation whose scenario would make scenarios/<name>/ the root or another folder
    may write nowhere (rather than everywhere)."""
    assert None is not await write(Sandbox(workspace), "scenarios/x.md", scenario)
    assert None is not await write(Sandbox(workspace), "a/b/x.md", scenario)


def test_write_paths_come_from_baton_toml(tmp_path: Path) -> None:
    """`[sandbox] write_paths` in baton.toml is read, and BATON_SANDBOX__WRITE_PATHS overrides."""
    (tmp_path / "baton.toml").write_text('[sandbox]\nwrite_paths = ["notes/"]\n')
    assert ("notes/",) == load_config(tmp_path, environ={}).sandbox.write_paths
    env = {"BATON_SANDBOX__WRITE_PATHS": '["reports", "notes/"]'}
    assert ("reports", "notes/") == load_config(tmp_path, environ=env).sandbox.write_paths


@pytest.mark.parametrize(
    "entry",
    [".venv/", ".git/hooks", "baton.toml", ".baton", "/etc", "../elsewhere", "a/../.git", ".", ""],
)
def test_write_paths_that_reach_code_or_leave_the_workspace_are_config_errors(
    tmp_path: Path, entry: str
) -> None:
    """An entry naming an always-refused place, the root, or outside is one line naming the key."""
    (tmp_path / "baton.toml").write_text(f'[sandbox]\nwrite_paths = ["{entry}"]\n')
    with pytest.raises(ConfigError, match=r"sandbox\.write_paths") as raised:
        load_config(tmp_path, environ={})
    assert 1 == len(str(raised.value).splitlines())
