"""A scenario's earlier runs: what a run wrote moves to `runs/<run>/` as the next run starts,
its inputs stay, a crash between the move and the new record neither loses nor moves twice
(docs/handoffs.md, "Earlier runs")."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from baton import Runtime
from baton.errors import RunArchiveConflictError
from baton.pipeline.host import open_pipeline
from baton.pipeline.messages import StartScenario
from baton.pipeline.run_archive import (
    archive_run,
    archive_stored_run,
    earlier_runs,
    stored_earlier_runs,
)
from baton.storage import Storage, open_storage
from tests.pipeline.test_scheduler import (
    BASE,
    NAME,
    design_turns,
    iteration_turns,
    make_scenario,
    wait_for_phase,
)

OUTPUTS = {
    "execution_outputs/iteration_1/failure_summary.json": b'{"iteration": 1}',
    "execution_outputs/iteration_2/samples/BS_MT_001.json": b'{"sample_id": "BS_MT_001"}',
    "unified_scenario_design.yaml": b"scenario: leave\n",
    "BusinessRules.md": "# 请假规则\n".encode(),
    "format_specifications.json": b"{}",
}
INPUTS = {
    "scenario.toml": b'requirement = "x"\n',
    "recording.jsonl": b"{}\n",
    "offline_script.json": b"{}",
    "prompts/init.md": b"# Init\n",
    "inputs/policy.pdf": b"%PDF",
    "notes.md": b"mine\n",
}


def files(folder: Path) -> dict[str, bytes]:
    """Every file under `folder`, by its `/`-separated path, with its bytes."""
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in folder.rglob("*")
        if path.is_file()
    }


def put(folder: Path, contents: dict[str, bytes]) -> None:
    for name, data in contents.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A scenario folder as run 1 left it: its inputs and what the run wrote."""
    scenario = tmp_path / "scenarios" / "leave"
    put(scenario, {**INPUTS, **OUTPUTS})
    return scenario


def test_a_runs_outputs_move_to_its_folder_and_the_inputs_stay(folder: Path) -> None:
    """`execution_outputs/` and Init's three design files move to runs/1/ in the same layout,
    byte for byte; scenario.toml, the recording, the script, prompts/, inputs/ and the user's
    own files stay where they were."""
    kept = archive_run(folder, 1)
    assert folder / "runs" / "1" == kept
    assert OUTPUTS == files(folder / "runs" / "1")
    assert INPUTS == {k: v for k, v in files(folder).items() if not k.startswith("runs/")}


def test_a_run_that_wrote_nothing_leaves_no_folder(tmp_path: Path) -> None:
    """A run that ended before writing anything archives nothing: no runs/ is made."""
    put(tmp_path, INPUTS)
    assert (None, False) == (archive_run(tmp_path, 1), (tmp_path / "runs").exists())


def test_an_archive_a_crash_cut_short_is_finished_without_loss(folder: Path) -> None:
    """Killed after some items moved into the staging folder: the next archive moves the
    rest and completes runs/1 with every file once."""
    staging = folder / "runs" / ".1.partial"
    staging.mkdir(parents=True)
    os.rename(folder / "execution_outputs", staging / "execution_outputs")
    os.rename(folder / "BusinessRules.md", staging / "BusinessRules.md")
    archive_run(folder, 1)
    assert (OUTPUTS, [1]) == (files(folder / "runs" / "1"), earlier_runs(folder))
    assert not staging.exists()


def test_an_archive_done_before_a_crash_is_not_done_twice(folder: Path) -> None:
    """Killed after the move but before the new run's record was saved: the submit made
    again finds runs/1 finished and moves nothing (no runs/1/runs/, no runs/2/)."""
    archive_run(folder, 1)
    before = files(folder)
    assert folder / "runs" / "1" == archive_run(folder, 1)
    assert before == files(folder)


def test_an_existing_run_folder_is_never_written_over(folder: Path) -> None:
    """runs/1/ already there while outputs are still in the scenario's folder: refused with
    what to do, and nothing moves."""
    put(folder / "runs" / "1", {"BusinessRules.md": b"# kept\n"})
    before = files(folder)
    with pytest.raises(RunArchiveConflictError, match=r"runs/1 already exists.*move one"):
        archive_run(folder, 1)
    assert before == files(folder)


def test_earlier_runs_are_the_numbered_folders_in_number_order(tmp_path: Path) -> None:
    """runs/10 sorts after runs/2; a staging folder, a file and other names are not runs."""
    for name in ("10", "2", "1", ".3.partial", "notes", "04"):
        (tmp_path / "runs" / name).mkdir(parents=True)
    (tmp_path / "runs" / "5").write_text("a file")
    assert [1, 2, 10] == earlier_runs(tmp_path)


def rewrite_script(workspace: Path, init: list[object], execute: list[object]) -> None:
    script = {"actors": {"init": init, "execute": execute}}
    (workspace / BASE / "script.json").write_text(json.dumps(script))


async def two_runs(
    tmp_path: Path, run_1_files: Callable[[], Awaitable[dict[str, bytes]]]
) -> dict[str, bytes]:
    """Run 1 (two iterations) then run 2 (one) of the scenario `make_scenario` wrote; what
    `run_1_files` read between the two, once both are checked to have completed as asked."""
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        await rt.ask("scheduler", StartScenario(scenario=NAME))
        first = await wait_for_phase(rt, "completed", "failed")
    run_1 = await run_1_files()
    rewrite_script(tmp_path, design_turns(3), iteration_turns(1, 3, complete=True))
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        await rt.ask("scheduler", StartScenario(scenario=NAME))
        second = await wait_for_phase(rt, "completed", "failed")
    assert (("completed", 2, 1), ("completed", 1, 2)) == (
        (first.phase, first.iteration, first.run),
        (second.phase, second.iteration, second.run),
    )
    return run_1


def make_two_runs(tmp_path: Path) -> None:
    """The scenario of `two_runs`: two iterations in run 1."""
    make_scenario(
        tmp_path,
        init=design_turns(1) + design_turns(2),
        execute=iteration_turns(1, 1, complete=False) + iteration_turns(2, 3, complete=True),
        auto_approve=True,
    )


async def test_a_resubmitted_scenario_keeps_run_1_apart(tmp_path: Path) -> None:
    """Run 1 ends after two iterations; run 2, one iteration, finds none of run 1's files
    in its place: they are in runs/1 as run 1 left them, and run 2's state says run 2."""
    make_two_runs(tmp_path)
    folder = tmp_path / BASE

    async def local_run_1() -> dict[str, bytes]:
        return {k: v for k, v in files(folder).items() if k not in ("scenario.toml", "script.json")}

    run_1 = await two_runs(tmp_path, local_run_1)
    assert run_1 == files(folder / "runs" / "1")
    assert ["iteration_1"] == sorted(p.name for p in (folder / "execution_outputs").iterdir())
    assert b"version: 3" in (folder / "unified_scenario_design.yaml").read_bytes()


async def test_a_move_a_crash_cut_short_is_finished_by_the_next_submit(tmp_path: Path) -> None:
    """The state a kill -9 leaves halfway through the move, before run 2's record is saved
    (the record still says run 1, `execution_outputs/` already staged): the next submit
    finishes the move and starts run 2, and runs/1 holds run 1's files, each once."""
    make_scenario(tmp_path, init=design_turns(1), execute=iteration_turns(1, 3, complete=True))
    folder = tmp_path / BASE
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        await rt.ask("scheduler", StartScenario(scenario=NAME, auto_approve=True))
        await wait_for_phase(rt, "completed", "failed")
    run_1 = {k: v for k, v in files(folder).items() if k not in ("scenario.toml", "script.json")}
    staging = folder / "runs" / ".1.partial"
    staging.mkdir(parents=True)
    os.rename(folder / "execution_outputs", staging / "execution_outputs")
    rewrite_script(tmp_path, design_turns(2), iteration_turns(1, 3, complete=True))
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        await rt.ask("scheduler", StartScenario(scenario=NAME, auto_approve=True))
        second = await wait_for_phase(rt, "completed", "failed")
    assert ("completed", 2) == (second.phase, second.run)
    assert (run_1, [1], False) == (
        files(folder / "runs" / "1"),
        earlier_runs(folder),
        staging.exists(),
    )
    assert b"version: 2" in (folder / "unified_scenario_design.yaml").read_bytes()


async def test_a_submit_that_would_write_over_a_kept_run_is_refused(tmp_path: Path) -> None:
    """Run 1 ended, and a runs/1/ is already there (put back by hand): the next submit is
    refused naming it, nothing moves, and the scenario stays at its run 1."""
    make_scenario(tmp_path, init=design_turns(1), execute=iteration_turns(1, 3, complete=True))
    folder = tmp_path / BASE
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        await rt.ask("scheduler", StartScenario(scenario=NAME, auto_approve=True))
        await wait_for_phase(rt, "completed", "failed")
        put(folder / "runs" / "1", {"BusinessRules.md": b"# an older run 1\n"})
        before = files(folder)
        with pytest.raises(RunArchiveConflictError, match=f"{folder / 'runs' / '1'} already"):
            await rt.ask("scheduler", StartScenario(scenario=NAME, auto_approve=True))
        after = await wait_for_phase(rt, "completed", "failed")
    assert (before, 1) == (files(folder), after.run)


# --- in a bucket: copy, then delete (docs/handoffs.md, "Earlier runs") ------------------------

PREFIX = "scenarios/leave"


async def stored(storage: Storage, prefix: str = PREFIX) -> dict[str, bytes]:
    """Every object under `prefix`, by its path from it, with its bytes."""
    listing = await storage.list(prefix)
    return {item.path: await storage.read(f"{prefix}/{item.path}") for item in listing.objects}


async def put_stored(storage: Storage, contents: dict[str, bytes], prefix: str = PREFIX) -> None:
    for name, data in contents.items():
        await storage.write(f"{prefix}/{name}", data)


@pytest.fixture
async def bucket(s3_url: str, tmp_path: Path) -> Storage:
    """A bucket holding a scenario as run 1 left it: its inputs and what the run wrote."""
    storage = open_storage(s3_url, tmp_path)
    await put_stored(storage, {**INPUTS, **OUTPUTS})
    return storage


class KilledError(Exception):
    """The process was killed here."""


class KilledAt:
    """A store whose process is killed at its `at`-th delete: nothing after it happens."""

    def __init__(self, storage: Storage, at: int) -> None:
        self.storage, self.at, self.deletes = storage, at, 0
        self.url = storage.url

    def __getattr__(self, name: str) -> Any:
        return getattr(self.storage, name)

    async def delete(self, path: str) -> None:
        self.deletes += 1
        if self.deletes >= self.at:
            raise KilledError(path)
        await self.storage.delete(path)


async def test_in_a_bucket_a_runs_outputs_move_to_its_prefix_and_the_inputs_stay(
    bucket: Storage,
) -> None:
    """In a bucket, `execution_outputs/` and the design files are under runs/1/ byte for
    byte, the inputs are untouched, and no staging object is left."""
    kept = await archive_stored_run(bucket, PREFIX, 1)
    assert f"{PREFIX}/runs/1" == kept
    assert OUTPUTS == await stored(bucket, f"{PREFIX}/runs/1")
    assert INPUTS == {k: v for k, v in (await stored(bucket)).items() if not k.startswith("runs/")}
    assert [1] == await stored_earlier_runs(bucket, PREFIX)
    assert {} == await stored(bucket, f"{PREFIX}/runs/.1.partial")


@pytest.mark.parametrize(
    "killed_at",
    [1, 3, len(OUTPUTS) + 1, len(OUTPUTS) + 2],
    ids=["first-copy-done", "mid-first-delete", "second-copy-done", "mid-second-delete"],
)
async def test_in_a_bucket_a_move_killed_between_copy_and_delete_is_finished_by_a_retry(
    bucket: Storage, killed_at: int
) -> None:
    """Killed after its copies but before (or among) their deletes, at either step: the
    retry finishes the move, runs/1 holds run 1's files once, and no staging is left."""
    with pytest.raises(KilledError):
        await archive_stored_run(KilledAt(bucket, killed_at), PREFIX, 1)  # type: ignore[arg-type]
    assert f"{PREFIX}/runs/1" == await archive_stored_run(bucket, PREFIX, 1)
    everything = await stored(bucket)
    assert (OUTPUTS, INPUTS) == (
        await stored(bucket, f"{PREFIX}/runs/1"),
        {k: v for k, v in everything.items() if not k.startswith("runs/")},
    )
    assert [] == [k for k in everything if k.startswith("runs/.")]


async def test_in_a_bucket_an_archive_done_is_not_done_twice(bucket: Storage) -> None:
    """Archived before a crash kept the new record from being saved: the retry finds runs/1
    whole and moves nothing."""
    await archive_stored_run(bucket, PREFIX, 1)
    before = await stored(bucket)
    assert f"{PREFIX}/runs/1" == await archive_stored_run(bucket, PREFIX, 1)
    assert before == await stored(bucket)


async def test_in_a_bucket_an_existing_run_prefix_is_never_written_over(bucket: Storage) -> None:
    """runs/1/ already in the bucket while outputs are still in place: refused, naming it and
    how to move it aside, and no object changes."""
    await put_stored(bucket, {"runs/1/BusinessRules.md": b"# kept\n"})
    before = await stored(bucket)
    with pytest.raises(RunArchiveConflictError, match=r"runs/1 already exists.*aws s3 mv"):
        await archive_stored_run(bucket, PREFIX, 1)
    assert before == await stored(bucket)


async def test_in_a_bucket_a_staged_object_with_other_bytes_is_not_written_over(
    bucket: Storage,
) -> None:
    """A staged copy whose bytes differ from the output in place is no copy of it: the move
    stops as a conflict and the staged object keeps its bytes."""
    await put_stored(bucket, {"runs/.1.partial/BusinessRules.md": b"# other\n"})
    with pytest.raises(RunArchiveConflictError, match=r"runs/.1.partial already exists"):
        await archive_stored_run(bucket, PREFIX, 1)
    assert b"# other\n" == await bucket.read(f"{PREFIX}/runs/.1.partial/BusinessRules.md")
    assert OUTPUTS["BusinessRules.md"] == await bucket.read(f"{PREFIX}/BusinessRules.md")


async def test_with_a_bucket_a_resubmitted_scenario_keeps_run_1_apart_in_it(
    s3_url: str, tmp_path: Path
) -> None:
    """With `[storage] url`, run 2's submit moves run 1's objects to runs/1/ in the bucket,
    as they were, and run 2 writes its own in their place; the workspace holds none."""
    make_two_runs(tmp_path)
    (tmp_path / "baton.toml").write_text(f'[storage]\nurl = "{s3_url}"\n', encoding="utf-8")
    storage = open_storage(s3_url, tmp_path)
    inputs = ("scenario.toml", "script.json")  # the bucket has them from the submit

    async def stored_run_1() -> dict[str, bytes]:
        return {k: v for k, v in (await stored(storage, BASE)).items() if k not in inputs}

    run_1 = await two_runs(tmp_path, stored_run_1)
    assert "execution_outputs/iteration_2/failure_summary.json" in run_1
    assert run_1 == await stored(storage, f"{BASE}/runs/1")
    assert [1] == await stored_earlier_runs(storage, BASE)
    assert [] == [
        k for k in await stored(storage, BASE) if k.startswith("execution_outputs/iteration_2")
    ]
    assert b"version: 3" in await storage.read(f"{BASE}/unified_scenario_design.yaml")
    assert ["scenario.toml", "script.json"] == sorted(p.name for p in (tmp_path / BASE).iterdir())
