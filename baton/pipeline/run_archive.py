"""A scenario's earlier runs: before a new run starts, what the previous run wrote in
`scenarios/<name>/` moves to `scenarios/<name>/runs/<run>/`, the same layout inside, so the
current run keeps the layout everything else reads (docs/handoffs.md, "Artifact layout").

A run writes `execution_outputs/` and Init's design files (`RUN_OUTPUTS`); nothing else in
the folder moves: `scenario.toml`, `prompts/`, `recording.jsonl`, the offline script and
whatever else its user put there are the inputs of every run.

Crash-safe and never overwriting (docs/handoffs.md, "Earlier runs"): each item is renamed
into `runs/.<run>.partial/`, that folder is renamed to `runs/<run>/` in one step, and only
then does the Scheduler save the new run's record. Killed before that save, the submit finds
the old record again and `archive_run` carries on: items still in place join those already
staged; a `runs/<run>/` already made is the finished archive, and nothing moves twice. An
existing `runs/<run>/` is never written into: with outputs still beside it (put there by
hand: no agent writes before the new record is saved) the submit is refused.

Blocking (renames and fsyncs on one filesystem): the Scheduler runs it in a worker thread.
It imports neither the logger nor the pipeline's models, so `baton show` lists the earlier
runs with this module alone (docs/architecture.md, "What a command imports").
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from baton._write_rules import RUNS_DIR
from baton.pipeline.errors import RunArchiveConflictError

RUN_OUTPUTS = (
    "execution_outputs",
    "unified_scenario_design.yaml",
    "BusinessRules.md",
    "format_specifications.json",
)
"""What a run writes in its scenario's folder: Execute's iterations and Init's design files
(baton/pipeline/prompts/init.md, "Duties")."""

_RUN_NAME = re.compile(r"[1-9][0-9]*", re.ASCII)


def earlier_runs(folder: Path) -> list[int]:
    """The runs kept under the scenario `folder`'s `runs/`, in number order (none: [])."""
    try:
        names = [entry.name for entry in os.scandir(folder / RUNS_DIR) if entry.is_dir()]
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(int(name) for name in names if _RUN_NAME.fullmatch(name))


def runs_line(folder: Path, runs: list[int]) -> str:
    """`earlier runs kept in scenarios/NAME/runs/1, 2`, for the summary and `baton show`."""
    return f"earlier runs kept in {folder / RUNS_DIR}/{', '.join(str(run) for run in runs)}"


def archive_run(folder: Path, run: int) -> Path | None:
    """Move what run `run` wrote in the scenario `folder` to `folder/runs/<run>/`; that folder,
    or None when the run left nothing there. `RunArchiveConflictError` when `runs/<run>/`
    exists and outputs are still in `folder`: nothing is moved."""
    runs = folder / RUNS_DIR
    final = runs / str(run)
    staging = runs / f".{run}.partial"
    left = [name for name in RUN_OUTPUTS if os.path.lexists(folder / name)]
    if os.path.lexists(final):
        if left:
            raise RunArchiveConflictError(final, run, left)
        return final  # archived before a crash kept the new run's record from being saved
    if not left and not os.path.lexists(staging):
        return None
    staging.mkdir(parents=True, exist_ok=True)
    clashes = [name for name in left if os.path.lexists(staging / name)]
    if clashes:
        raise RunArchiveConflictError(staging, run, clashes)
    for name in left:
        os.rename(folder / name, staging / name)
    if not any(staging.iterdir()):
        staging.rmdir()  # made just before a crash, before anything moved in
        return None
    # Durable before the record that says a new run has begun: a power cut must not leave
    # that record beside outputs still in place.
    _sync_dir(folder)
    _sync_dir(staging)
    os.rename(staging, final)
    _sync_dir(runs)
    return final


def _sync_dir(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
