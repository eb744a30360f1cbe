"""A scenario's inputs travel with its submit: with a remote store, the process that takes the
submit (the Scheduler's, which has `scenarios/<name>/` on its disk) copies them into the
store under the same keys, and every process reads them from there (docs/storage.md,
"Scenario inputs").

The inputs are everything in the scenario's folder but what runs write there (`RUN_OUTPUTS`
and `runs/`: `baton/pipeline/run_archive.py`). They are copied once per run, so a run reads
the inputs it was submitted with: an edit made on the disk afterwards reaches the store with
the next submit. An input the folder no longer has (a recording deleted to go back to the
script, a prompt removed) is deleted from the store then too; only inputs an agent can never
write are deleted that way (`never_written`), so nothing a run wrote is ever lost to it.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from baton._log import get_logger
from baton._regular_files import read_regular
from baton._write_rules import RUNS_DIR, SCENARIOS_DIR, never_written
from baton.errors import BatonError
from baton.models.recording import MAX_RECORDING_BYTES
from baton.pipeline.errors import ScenarioInputsError
from baton.pipeline.run_archive import RUN_OUTPUTS
from baton.storage._atomic_file import is_write_leftover
from baton.storage.protocol import Storage

log = get_logger(__name__)

MAX_INPUT_BYTES = MAX_RECORDING_BYTES
"""An input larger than this is refused at submit: each is one PUT, held whole in memory (the
largest input a scenario needs, its recording, has the same limit)."""

_NOT_INPUTS = frozenset((*RUN_OUTPUTS, RUNS_DIR))


def scenario_key(scenario: str, *parts: str) -> str:
    """The key of `parts` in a scenario's folder: its workspace-relative path."""
    return "/".join((SCENARIOS_DIR, scenario, *parts))


def local_inputs(workspace: Path, scenario: str) -> dict[str, bytes]:
    """The inputs in `scenarios/<scenario>/` of `workspace`, by key (blocking: run it on a
    worker thread). `ValueError` or `OSError` naming a file that cannot be read."""
    root = Path(os.path.realpath(workspace))
    folder = workspace / SCENARIOS_DIR / scenario
    inputs: dict[str, bytes] = {}
    for directory, folders, files in os.walk(folder):
        here = Path(directory)
        if here == folder:
            folders[:] = [name for name in folders if name not in _NOT_INPUTS]
        for name in sorted(files):
            if is_write_leftover(name) or (here == folder and name in _NOT_INPUTS):
                continue
            path = here / name
            relative = path.relative_to(workspace).as_posix()
            # A link to a file inside the workspace is read as Read would read it; one that
            # leads out is refused (docs/handoffs.md, "Sandbox").
            real = Path(os.path.realpath(path))
            if not real.is_relative_to(root):
                raise ValueError(f"{relative} is a symbolic link leading outside the workspace")
            inputs[relative] = read_regular(real, relative, MAX_INPUT_BYTES)
    return inputs


async def upload_inputs(storage: Storage, workspace: Path, scenario: str) -> int:
    """Copy the scenario's inputs into `storage`, replacing those of its previous run; how
    many. `ScenarioInputsError` (the caller's answer: the submit is refused, nothing starts)
    when one cannot be read or stored."""
    try:
        inputs = await anyio.to_thread.run_sync(local_inputs, workspace, scenario)
        listing = await storage.list(scenario_key(scenario))
        stale = [
            key
            for item in listing.objects
            for key in [scenario_key(scenario, item.path)]
            if key not in inputs and _only_an_input(key)
        ]
        for key, data in inputs.items():
            await storage.write(key, data)
        for key in stale:
            await storage.delete(key)
    except (OSError, ValueError, BatonError) as error:
        problem = str(error) if not isinstance(error, OSError) else _os_problem(error)
        raise ScenarioInputsError(scenario, storage.url, problem) from None
    log.info("scenario.inputs_stored", scenario=scenario, objects=len(inputs), removed=len(stale))
    return len(inputs)


def _only_an_input(key: str) -> bool:
    """Whether an object at `key` can only have been put there by a submit: an agent never
    writes it, and it is not the record of an earlier run."""
    parts = key.split("/")
    return never_written(parts) is not None and parts[2].casefold() != RUNS_DIR


def _os_problem(error: OSError) -> str:
    name = f"{error.filename} " if error.filename else ""
    return f"{name}cannot be read ({error.strerror or error})"
