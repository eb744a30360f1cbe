"""The sandbox: '..', absolute paths outside and escaping links are refused; the rest resolves,
links inside the workspace included."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from baton.agents.errors import SandboxViolationError
from baton.agents.tools import List, Read, Sandbox, Toolbox, ToolOutcome, Write, scenario_scope
from baton.context.payload import ToolUseBlock


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "scenarios/leave").mkdir(parents=True)
    (root / "scenarios/leave/BusinessRules.md").write_text("rules\n", encoding="utf-8")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/secret.txt").write_text("secret\n", encoding="utf-8")
    return root


async def test_a_plain_relative_path_resolves_inside(workspace: Path) -> None:
    """A relative path maps to the real file under the root and back to the same text."""
    sandbox = Sandbox(workspace)
    real = await sandbox.resolve("scenarios/leave/BusinessRules.md")
    assert sandbox.root / "scenarios/leave/BusinessRules.md" == real
    assert real.is_file()
    assert "scenarios/leave/BusinessRules.md" == sandbox.relative(real)
    assert "." == sandbox.relative(await sandbox.resolve("."))


@pytest.mark.parametrize("path", ["../outside/secret.txt", "scenarios/../../outside", "a/../b"])
async def test_dot_dot_is_refused_wherever_it_appears(workspace: Path, path: str) -> None:
    """Any '..' component is refused, even one that would land back inside."""
    with pytest.raises(SandboxViolationError, match=r"'\.\.' is not allowed"):
        await Sandbox(workspace).resolve(path)


async def test_an_absolute_path_outside_is_refused_and_one_inside_allowed(
    workspace: Path,
) -> None:
    """/…/outside is refused as outside; the absolute path of a workspace file is accepted."""
    sandbox = Sandbox(workspace)
    outside = str(workspace.parent / "outside/secret.txt")
    with pytest.raises(SandboxViolationError, match="absolute path outside the workspace"):
        await sandbox.resolve(outside)
    inside = str(workspace / "scenarios/leave/BusinessRules.md")
    assert "scenarios/leave/BusinessRules.md" == sandbox.relative(await sandbox.resolve(inside))


async def test_symlinks_that_escape_are_refused(workspace: Path) -> None:
    """A directory link, a file link and a dangling link that point outside are all refused."""
    outside = workspace.parent / "outside"
    os.symlink(outside, workspace / "dir_link")
    os.symlink(outside / "secret.txt", workspace / "file_link")
    os.symlink(outside / "not_yet.txt", workspace / "dangling_link")
    sandbox = Sandbox(workspace)
    for path in ("dir_link/secret.txt", "file_link", "dangling_link", "dir_link/new.txt"):
        with pytest.raises(SandboxViolationError, match="symbolic link"):
            await sandbox.resolve(path)


async def test_a_symlink_that_stays_inside_is_followed(workspace: Path) -> None:
    """A link to another place in the workspace resolves to its target."""
    os.symlink(workspace / "scenarios/leave", workspace / "current")
    sandbox = Sandbox(workspace)
    real = await sandbox.resolve("current/BusinessRules.md")
    assert "scenarios/leave/BusinessRules.md" == sandbox.relative(real)


async def test_the_runtime_directory_and_empty_paths_are_refused(workspace: Path) -> None:
    """'.baton/' belongs to the runtime, and an empty path names nothing."""
    (workspace / ".baton/journal").mkdir(parents=True)
    sandbox = Sandbox(workspace)
    with pytest.raises(SandboxViolationError, match="reserved for the runtime"):
        await sandbox.resolve(".baton/journal/init/c1.jsonl")
    with pytest.raises(SandboxViolationError, match="empty"):
        await sandbox.resolve("  ")


async def test_a_refusal_reaches_the_model_as_an_error_result(workspace: Path) -> None:
    """Through the toolbox, an escaping path is an is_error result that says why, not a raise."""
    box = Toolbox([Read(Sandbox(workspace))])
    outcome = await box.run(
        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": "../outside/secret.txt"}}
    )
    assert outcome.is_error
    assert "refused path '../outside/secret.txt': '..' is not allowed" in outcome.content
    assert "secret\n" not in outcome.content


async def run_tool(box: Toolbox, name: str, **args: object) -> ToolOutcome:
    block: ToolUseBlock = {"type": "tool_use", "id": "t1", "name": name, "input": dict(args)}
    with scenario_scope("leave"):
        return await box.run(block)


def file_box(workspace: Path) -> Toolbox:
    sandbox = Sandbox(workspace)
    return Toolbox([Read(sandbox), Write(sandbox), List(sandbox)])


async def test_links_that_stay_inside_are_followed_by_every_tool(workspace: Path) -> None:
    """A relative link, one whose target climbs with '..', and a link to a file are followed
    by Read, List and Write, which name the place they lead to."""
    (workspace / "scenarios/other").mkdir()
    (workspace / "scenarios/other/o.txt").write_text("other\n", encoding="utf-8")
    os.symlink("scenarios/leave", workspace / "current")
    os.symlink("../other", workspace / "scenarios/leave/sibling")
    os.symlink("BusinessRules.md", workspace / "scenarios/leave/rules.md")
    box = file_box(workspace)
    read = await run_tool(box, "Read", path="current/BusinessRules.md")
    climbed = await run_tool(box, "Read", path="scenarios/leave/sibling/o.txt")
    to_file = await run_tool(box, "Read", path="scenarios/leave/rules.md")
    listed = await run_tool(box, "List", path="current")
    written = await run_tool(box, "Write", path="current/new.md", content="new\n")
    assert [
        "scenarios/leave/BusinessRules.md: 1 lines, 6 chars; lines 1-1 of 1",
        "scenarios/other/o.txt: 1 lines, 6 chars; lines 1-1 of 1",
        "scenarios/leave/BusinessRules.md: 1 lines, 6 chars; lines 1-1 of 1",
        "scenarios/leave/: 3 entries",
        "wrote scenarios/leave/new.md: 1 lines, 4 chars",
    ] == [o.content.splitlines()[0] for o in (read, climbed, to_file, listed, written)]
    assert "new\n" == (workspace / "scenarios/leave/new.md").read_text(encoding="utf-8")


async def test_links_that_lead_outside_are_refused_by_every_tool(workspace: Path) -> None:
    """A relative link climbing above the root, and a link to a link that leads out, are
    refused by Read, List and Write with the sandbox's reason; nothing is written outside."""
    outside = workspace.parent / "outside"
    os.symlink("../../../outside", workspace / "scenarios/leave/up")
    os.symlink(outside, workspace / "away")
    os.symlink("../../away", workspace / "scenarios/leave/hop")
    box = file_box(workspace)
    outcomes = [
        await run_tool(box, "Read", path="scenarios/leave/up/secret.txt"),
        await run_tool(box, "List", path="scenarios/leave/up"),
        await run_tool(box, "Write", path="scenarios/leave/up/x.md", content="x\n"),
        await run_tool(box, "Read", path="scenarios/leave/hop/secret.txt"),
        await run_tool(box, "Write", path="scenarios/leave/hop/x.md", content="x\n"),
    ]
    assert [True] * 5 == [
        o.is_error and "a symbolic link on this path leads outside the workspace" in o.content
        for o in outcomes
    ]
    assert ["secret.txt"] == os.listdir(outside)


async def test_a_link_loop_is_refused_saying_so(workspace: Path) -> None:
    """Links that lead to each other are refused after 40 hops, with a reason, not an OS error."""
    os.symlink("b", workspace / "scenarios/leave/a")
    os.symlink("a", workspace / "scenarios/leave/b")
    outcome = await run_tool(file_box(workspace), "Read", path="scenarios/leave/a/x.txt")
    assert (
        "refused path 'scenarios/leave/a/x.txt': more than 40 symbolic links on this path (a loop?)"
    ) == outcome.content


async def test_an_absolute_link_may_spell_the_workspace_as_it_was_given(tmp_path: Path) -> None:
    """With the workspace given through a link of its own, an absolute link target spelled
    through that link still counts as inside and is followed."""
    real = tmp_path / "real"
    (real / "scenarios/leave").mkdir(parents=True)
    (real / "scenarios/leave/a.md").write_text("a\n", encoding="utf-8")
    os.symlink(real, tmp_path / "given")
    os.symlink(tmp_path / "given/scenarios/leave", real / "current")
    outcome = await run_tool(file_box(tmp_path / "given"), "Read", path="current/a.md")
    assert (
        "scenarios/leave/a.md: 1 lines, 2 chars; lines 1-1 of 1" == outcome.content.split("\n")[0]
    )
