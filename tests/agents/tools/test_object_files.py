"""Read, Write and List over a remote store (a real SeaweedFS): the same results and the same
refusals as over the workspace folder, and a refused write leaves nothing in the bucket
(docs/storage.md, "What is stored where")."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from baton import Actor, Runtime, handler
from baton.agents.agent_config import AgentConfig
from baton.agents.journal import FileJournalStore
from baton.agents.tools import Sandbox, Toolbox, ToolOutcome, file_tools, scenario_scope
from baton.context.payload import ToolUseBlock
from baton.models.scripted import Script, ScriptedModel
from baton.pipeline.agent_context import AgentContext
from baton.pipeline.artifacts import check_artifact
from baton.pipeline.defaults import DEFAULT_AGENTS
from baton.pipeline.messages import Dispatch, RoundEnded
from baton.pipeline.roles import ExecuteActor, agent_setup
from baton.storage import LocalStorage, ObjectInfo, Storage, open_storage

RULES = "scenarios/leave/BusinessRules.md"
SEED = {
    RULES: b"# rules\n1. create the request\n",
    "scenarios/leave/sub/b.json": b"{}",
    "scenarios/leave/sub/deep/c.txt": b"c\n",
    "scenarios/leave/a.txt": b"a",
    "scenarios/other/x.md": b"x",
    ".baton/journal/execute.jsonl": b"{}\n",
}
REPORT = "scenarios/leave/execution_outputs/iteration_1/layer1_problems_report.json"


def call(name: str, **args: Any) -> ToolUseBlock:
    return {"type": "tool_use", "id": "t1", "name": name, "input": args}


async def seeded(storage: Storage) -> Storage:
    for key, data in SEED.items():
        await storage.write(key, data)
    return storage


@pytest.fixture
async def local(tmp_path: Path) -> Storage:
    """The workspace folder, through `LocalStorage`: the tools walk it as they always have."""
    return await seeded(LocalStorage(tmp_path / "local"))


@pytest.fixture
async def remote(s3_url: str, tmp_path: Path) -> Storage:
    """A bucket on the session's SeaweedFS, seeded with the same files."""
    return await seeded(open_storage(s3_url, tmp_path / "unused"))


@pytest.fixture(params=["local", "remote"])
async def either(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    """The seeded workspace folder, then the seeded bucket."""
    if request.param == "local":
        return await seeded(LocalStorage(tmp_path / "local"))
    return await seeded(open_storage(request.getfixturevalue("s3_url"), tmp_path / "unused"))


async def run(storage: Storage, block: ToolUseBlock, tmp_path: Path) -> ToolOutcome:
    """One call of the file tools over `storage`, in scenario `leave`; the workspace folder
    of a remote store is empty."""
    workspace = storage.root if isinstance(storage, LocalStorage) else tmp_path / "empty"
    workspace.mkdir(exist_ok=True)
    tools = file_tools(Sandbox(workspace), storage=storage, check=check_artifact)
    with scenario_scope("leave"):
        return await Toolbox(tools).run(block)


async def test_a_written_file_is_one_object_read_back_with_numbered_lines(
    remote: Storage, tmp_path: Path
) -> None:
    """Write stores the whole text at its key; Read returns it numbered, with its size."""
    path = "scenarios/leave/notes/规则.md"
    wrote = await run(remote, call("Write", path=path, content="# 规则\n1. 先创建申请\n"), tmp_path)
    read = await run(remote, call("Read", path=path, offset=2), tmp_path)
    assert (
        "wrote scenarios/leave/notes/规则.md: 2 lines, 14 chars",
        "scenarios/leave/notes/规则.md: 2 lines, 14 chars; lines 2-2 of 2\n     2\t1. 先创建申请",
        "# 规则\n1. 先创建申请\n".encode(),
        [],
    ) == (
        wrote.content,
        read.content,
        await remote.read(path),
        list((tmp_path / "empty").iterdir()),
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            {"path": "scenarios/leave"},
            [
                "scenarios/leave/: 4 entries",
                "BusinessRules.md  (30 bytes)",
                "a.txt  (1 bytes)",
                "execution_outputs/",
                "sub/",
            ],
        ),
        (
            {"path": "scenarios/leave/sub", "recursive": True},
            [
                "scenarios/leave/sub/: 4 entries (recursive)",
                "b.json  (2 bytes)",
                "deep/",
                "deep/c.txt  (2 bytes)",
                "x.md  (1 bytes)",
            ],
        ),
        (
            {"path": ".", "recursive": True, "max_entries": 4},
            [
                "./: 4 entries (recursive); stopped at max_entries=4: list a subdirectory or "
                "raise max_entries to see the rest",
                "scenarios/",
                "scenarios/leave/",
                "scenarios/leave/BusinessRules.md  (30 bytes)",
                "scenarios/leave/a.txt  (1 bytes)",
            ],
        ),
    ],
    ids=["folder", "recursive", "capped-root"],
)
async def test_a_folder_lists_alike_in_the_workspace_and_the_store(
    either: Storage, args: dict[str, Any], expected: list[str], tmp_path: Path
) -> None:
    """Folders end in '/', objects show their bytes, entries sort by name, a recursive listing
    puts a folder's entries after it, the cap is said, and .baton/ is not listed."""
    await either.write(f"{REPORT[: REPORT.rindex('/')]}/x.json", b"{}")
    await either.write("scenarios/leave/sub/x.md", b"x")
    outcome = await run(either, call("List", **args), tmp_path)
    assert expected == outcome.content.splitlines()


INVALID_REPORT = json.dumps({"report_version": "1.0", "iteration": 1})
REFUSED = {
    "dot-dot": call("Read", path="../local/" + RULES),
    "absolute-outside": call("Read", path="/etc/hostname"),
    "empty": call("List", path=" "),
    "reserved": call("Read", path=".baton/journal/execute.jsonl"),
    "reserved-list": call("List", path=".baton"),
    "other-scenario": call("Write", path="scenarios/other/x.md", content="y"),
    "root": call("Write", path="a.md", content="y"),
    "scenario-input": call("Write", path="scenarios/leave/scenario.toml", content="y"),
    "prompts": call("Write", path="scenarios/leave/prompts/execute.md", content="y"),
    "earlier-runs": call("Write", path="scenarios/leave/runs/1/BusinessRules.md", content="y"),
    "pth": call("Write", path="scenarios/leave/zz.pth", content="y"),
    "config": call("Write", path="scenarios/leave/baton.toml", content="y"),
    "invalid-artifact": call("Write", path=REPORT, content=INVALID_REPORT),
    "write-a-folder": call("Write", path="scenarios/leave/sub", content="y"),
    "read-missing": call("Read", path="scenarios/leave/nope.md"),
    "read-a-folder": call("Read", path="scenarios/leave/sub"),
    "read-the-root": call("Read", path="."),
    "list-a-file": call("List", path=RULES),
    "list-missing": call("List", path="scenarios/nope"),
}


@pytest.mark.parametrize("block", REFUSED.values(), ids=REFUSED.keys())
async def test_the_store_refuses_what_the_workspace_refuses_and_writes_nothing(
    local: Storage, remote: Storage, block: ToolUseBlock, tmp_path: Path
) -> None:
    """'..', absolute, .baton/, outside the round's scope, a scenario's inputs and earlier
    runs, code and config, an invalid artifact, and a missing file or a folder where a file
    is meant: the same error text as in the workspace, and the bucket keeps only its seed
    (which the same tools read: the bucket, not the empty workspace, was asked)."""
    expected = await run(local, block, tmp_path)
    actual = await run(remote, block, tmp_path)
    control = await run(remote, call("Read", path=RULES, limit=1), tmp_path)
    assert (
        True,
        expected,
        sorted(SEED),
        f"{RULES}: 2 lines, 30 chars; lines 1-1 of 2; continue with offset=2",
    ) == (
        expected.is_error,
        actual,
        [item.path for item in (await remote.list()).objects],
        control.content.splitlines()[0],
    )


async def test_an_agent_given_a_store_writes_its_files_there(
    remote: Storage, tmp_path: Path
) -> None:
    """An execute round whose setup has a remote `storage` writes to the bucket, not the
    workspace: the toolbox is built with the setup's store."""
    path = "scenarios/leave/design.md"
    turns: list[Any] = [
        {"tool_use": [{"name": "Write", "input": {"path": path, "content": "d\n"}}]},
        "done",
    ]
    model = ScriptedModel(Script.model_validate({"actors": {"execute": turns}}))
    workspace = tmp_path / "worker"
    workspace.mkdir()

    class Scheduler(Actor):
        @handler
        async def round_ended(self, message: RoundEnded) -> None:
            pass

    async with Runtime.open(workspace) as rt:
        await rt.spawn("scheduler", Scheduler)
        setup = agent_setup(
            "execute",
            AgentConfig.model_validate(DEFAULT_AGENTS["execute"]),
            workspace=workspace,
            model=model,
            journal=FileJournalStore(workspace),
            token_log=rt.token_log,
        )
        await rt.spawn("execute", ExecuteActor, dataclasses.replace(setup, storage=remote))
        await rt.ask(
            "execute",
            Dispatch(scenario="leave", agent_context=AgentContext(task_summary="run it")),
        )
    assert (ObjectInfo(path, 2), False) == (
        await remote.stat(path),
        (workspace / path).exists(),
    )
