"""A folder swapped for a link to outside while the tools run never leads Write, Read or List
out of the workspace: the check and the use are the same open (docs/handoffs.md, "Sandbox")."""

from __future__ import annotations

import errno
import itertools
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from baton.agents.tools import (
    List,
    Read,
    Sandbox,
    Toolbox,
    Write,
    WriteInput,
    scenario_scope,
)
from baton.context.payload import ToolUseBlock

TRIES = 1000
OUTSIDE_TEXT = "OUTSIDE-SECRET"
OUTSIDE_ENTRY = "outside_only.txt"
# A rename over a name that a Write re-created in a gap of the swap (a folder there now).
_TAKEN = {errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR}


@dataclass
class Places:
    workspace: Path
    outside: Path
    swapped: Path  # scenarios/t/d: now a real folder, now a link to `outside`

    @property
    def parked(self) -> Path:
        """Where the real folder waits while the link stands in its place."""
        return self.workspace / "scenarios/t/.swap/parked"


@pytest.fixture
def places(tmp_path: Path) -> Places:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    folder = workspace / "scenarios/t/d"
    folder.mkdir(parents=True)
    (folder / "secret.txt").write_text("inside\n", encoding="utf-8")
    (workspace / "scenarios/t/.swap/trash").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{OUTSIDE_TEXT}\n", encoding="utf-8")
    (outside / OUTSIDE_ENTRY).write_text("", encoding="utf-8")
    os.symlink(outside, workspace / "scenarios/t/.swap/link")
    return Places(workspace, outside, folder)


def _move(source: Path, target: Path, trash: Path, names: Iterator[int]) -> None:
    """Rename `source` to `target` atomically; a folder a Write made at `target` meanwhile is
    moved into `trash` (it is inside the workspace) and the rename tried again."""
    while True:
        try:
            os.rename(source, target)
            return
        except OSError as error:
            if error.errno not in _TAKEN:
                raise
            os.rename(target, trash / str(next(names)))


@pytest.fixture
def swapper(places: Places) -> Iterator[Callable[[], None]]:
    """A thread swapping `scenarios/t/d` between the real folder and a link to outside, each
    step one rename, until the test calls the function it gets, which returns once the thread
    has stopped (so the folders stay put for the checks after); a failure of the thread fails
    the test."""
    hold = places.workspace / "scenarios/t/.swap"
    link, parked, trash = hold / "link", places.parked, hold / "trash"
    stop, started = threading.Event(), threading.Event()
    names = itertools.count()
    failures: list[OSError] = []

    def swap() -> None:
        try:
            while not stop.is_set():
                _move(places.swapped, parked, trash, names)
                _move(link, places.swapped, trash, names)
                started.set()
                _move(places.swapped, link, trash, names)
                _move(parked, places.swapped, trash, names)
        except OSError as error:
            failures.append(error)
        finally:
            started.set()

    thread = threading.Thread(target=swap, name="swapper", daemon=True)
    thread.start()
    assert started.wait(5)

    def halt() -> None:
        stop.set()
        thread.join(5)

    yield halt
    stop.set()
    thread.join(5)
    assert ([], False) == (failures, thread.is_alive())


def call(name: str, n: int, **args: object) -> ToolUseBlock:
    return {"type": "tool_use", "id": f"t{n}", "name": name, "input": dict(args)}


async def test_a_swapped_link_never_leads_a_tool_outside(
    places: Places, swapper: Callable[[], None]
) -> None:
    """With a thread swapping scenarios/t/d for a link to an outside folder, 1,000 tries each
    of Write, Read and List write nothing outside, never return the outside file's content
    and never list the outside folder; some of each still succeed inside."""
    sandbox = Sandbox(places.workspace)
    box = Toolbox([Read(sandbox), Write(sandbox), List(sandbox)])
    outside_reads = outside_listings = inside_reads = inside_listings = 0
    with scenario_scope("t"):
        for n in range(TRIES):
            await box.run(call("Write", n, path=f"scenarios/t/d/w{n}.txt", content="x\n"))
            read = await box.run(call("Read", n, path="scenarios/t/d/secret.txt"))
            outside_reads += OUTSIDE_TEXT in read.content
            inside_reads += not read.is_error
            listed = await box.run(call("List", n, path="scenarios/t/d"))
            outside_listings += OUTSIDE_ENTRY in listed.content
            inside_listings += not listed.is_error and OUTSIDE_ENTRY not in listed.content
    swapper()
    written_outside = sorted(set(os.listdir(places.outside)) - {"secret.txt", OUTSIDE_ENTRY})
    assert ([], 0, 0) == (written_outside, outside_reads, outside_listings)
    written_inside = list(places.workspace.rglob("w*.txt"))
    assert (True, True, True) == (bool(written_inside), inside_reads > 0, inside_listings > 0)


def swap_now(places: Places) -> None:
    """Swap scenarios/t/d for the link to outside at once, parking the real folder."""
    os.rename(places.swapped, places.parked)
    os.rename(places.workspace / "scenarios/t/.swap/link", places.swapped)


async def test_a_write_lands_in_the_folder_that_was_checked(
    places: Places,
) -> None:
    """When scenarios/t/d becomes a link to outside after Write checked the path and before it
    writes, the file lands in the folder that was checked, not in the link's target."""

    def swap_then_judge(path: str, content: str) -> bool:
        swap_now(places)
        return False

    with scenario_scope("t"):
        outcome = await Write(Sandbox(places.workspace), check=swap_then_judge).run(
            WriteInput(path="scenarios/t/d/new.md", content="checked\n")
        )
    parked = places.parked
    assert (False, ["new.md", "secret.txt"]) == (outcome.is_error, sorted(os.listdir(parked)))
    assert "checked\n" == (parked / "new.md").read_text(encoding="utf-8")
    assert [OUTSIDE_ENTRY, "secret.txt"] == sorted(os.listdir(places.outside))


async def test_a_write_that_fails_mid_way_leaves_the_old_file_whole_and_no_temp_file(
    places: Places, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Write whose fsync fails after its folder was swapped for a link keeps the old file
    whole and removes its temp file from that folder (not from the link's target)."""
    (places.swapped / "notes.md").write_text("old\n", encoding="utf-8")

    def swap_then_fail(fd: int) -> None:
        swap_now(places)
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", swap_then_fail)
    with scenario_scope("t"):
        outcome = await Toolbox([Write(Sandbox(places.workspace))]).run(
            call("Write", 0, path="scenarios/t/d/notes.md", content="new and whole\n")
        )
    parked = places.parked
    assert (True, "old\n") == (outcome.is_error, (parked / "notes.md").read_text(encoding="utf-8"))
    assert (["notes.md", "secret.txt"], [OUTSIDE_ENTRY, "secret.txt"]) == (
        sorted(os.listdir(parked)),
        sorted(os.listdir(places.outside)),
    )
