"""The sandbox: '..', absolute paths outside and escaping links are refused; the rest resolves."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from baton.actors.tools import Read, Sandbox, Toolbox
from baton.errors import SandboxViolationError


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
