"""What baton keeps under `.baton/` is its user's alone: directories 0700, files 0600, whatever
the umask (README, "Sandbox and file modes")."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from baton import Runtime
from baton.pipeline.host import open_pipeline
from baton.pipeline.messages import StartScenario
from baton.server._workspace_claim import claim_workspace
from baton.server.control_server import ControlServer

ROOT = Path(__file__).resolve().parents[2]
NAME = "leave_application"


@pytest.fixture(params=[0o022, 0o000], ids=["umask-022", "umask-000"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """The process umask for the test, restored after it."""
    previous = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(previous)


def modes(root: Path) -> dict[str, str]:
    """Every entry under `root` (itself included), relative path → its kind and octal mode."""
    found = {}
    for entry in [root, *sorted(root.rglob("*"))]:
        info = entry.lstat()
        kind = "dir" if stat.S_ISDIR(info.st_mode) else "file"
        if stat.S_ISSOCK(info.st_mode):
            kind = "socket"
        found[str(entry.relative_to(root.parent))] = f"{kind} {stat.S_IMODE(info.st_mode):o}"
    return found


def private(found: dict[str, str]) -> dict[str, str]:
    """`found` as it should be: directories 700, files and sockets 600."""
    return {
        path: f"{m.split()[0]} {700 if m.startswith('dir') else 600}" for path, m in found.items()
    }


async def test_everything_under_dot_baton_is_private_whatever_the_umask(
    tmp_path: Path, umask: int
) -> None:
    """A leave_application run (sqlite mailboxes, journals, scheduler state, a token log small
    enough to rotate, the pid file and the control socket) leaves nothing under .baton/ that
    another user could read, during the run and after it."""
    folder = tmp_path / "scenarios" / NAME
    folder.mkdir(parents=True)
    for name in ("offline_script.json", "scenario.toml"):
        shutil.copy(ROOT / "scenarios" / NAME / name, folder)
    (tmp_path / "baton.toml").write_text("[logs]\ntoken_log_max_bytes = 4096\n")
    async with (
        claim_workspace(tmp_path) as claim,
        Runtime.open(tmp_path) as rt,
        open_pipeline(rt, environ={}) as pipeline,
        ControlServer.open(rt, claim=claim),
    ):
        ended = pipeline.next_scenario_end()
        await rt.ask("scheduler", StartScenario(scenario=NAME, auto_approve=True))
        await ended.wait()
        await rt.token_log.drained()  # every record on disk: the log has rotated by now
        during = modes(tmp_path / ".baton")
    after = modes(tmp_path / ".baton")
    expected_files = {
        ".baton/baton.pid",
        ".baton/control.sock",
        ".baton/mailboxes.sqlite3",
        ".baton/mailboxes.sqlite3-wal",
        ".baton/mailboxes.sqlite3-shm",
        ".baton/logs/tokens.jsonl",
        ".baton/logs/tokens.jsonl.1",
        f".baton/scheduler/{NAME}.json",
        f".baton/journal/init/{NAME}.jsonl",
        f".baton/journal/execute/{NAME}.jsonl",
    }
    assert set() == expected_files - set(during)
    assert private(during) == during
    assert private(after) == after
