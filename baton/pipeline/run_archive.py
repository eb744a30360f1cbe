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

In a bucket (`[storage] url`; docs/storage.md, "What is stored where") there is no rename:
`archive_stored_run` copies each object, then deletes it, with the same promises
(docs/handoffs.md, "Earlier runs"). Every output object is copied to `runs/.<run>.partial/`,
then deleted from its place; then every staged object is copied to `runs/<run>/`, then
deleted from the staging prefix. The staging prefix is the mark of an unfinished move: while
an object is under it, `runs/<run>/` may be partial, and a retry carries on from what it
finds; with none, `runs/<run>/` is whole. A copy never replaces an object with other bytes:
one already staged (or already in `runs/<run>/`) with the same bytes is a copy a crash
interrupted before its delete, and one with other bytes stops the move as a conflict.
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from baton._write_rules import RUNS_DIR
from baton.pipeline.errors import RunArchiveConflictError
from baton.storage.keys import join_key

if TYPE_CHECKING:
    from baton.storage.protocol import Storage

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


def runs_line(folder: Path | str, runs: list[int]) -> str:
    """`earlier runs kept in scenarios/NAME/runs/1, 2`, for the summary and `baton show`
    (`folder` a path, or a bucket's url of the scenario's prefix)."""
    where = folder / RUNS_DIR if isinstance(folder, Path) else f"{folder}/{RUNS_DIR}"
    return f"earlier runs kept in {where}/{', '.join(str(run) for run in runs)}"


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


# --- in a bucket: copy, then delete -----------------------------------------------------------

COPIES_AT_ONCE = 8
"""Objects copied (or deleted) at once: a run's few hundred small objects in a few seconds."""


async def stored_earlier_runs(storage: Storage, folder: str) -> list[int]:
    """`earlier_runs` of the scenario whose objects are under the key prefix `folder`
    (`scenarios/NAME`) in `storage`."""
    listing = await storage.list(join_key(folder, RUNS_DIR), recursive=False)
    return sorted(int(name) for name in listing.folders if _RUN_NAME.fullmatch(name))


async def archive_stored_run(storage: Storage, folder: str, run: int) -> str | None:
    """`archive_run` for the objects under the key prefix `folder` (`scenarios/NAME`) in
    `storage`: the key prefix `folder/runs/<run>`, or None when the run left nothing there.
    `RunArchiveConflictError` when `runs/<run>/` exists and outputs are still in place, or
    when a copy would replace an object with other bytes."""
    runs = join_key(folder, RUNS_DIR)
    final = join_key(runs, str(run))
    staging = join_key(runs, f".{run}.partial")
    objects = [item.path for item in (await storage.list(folder)).objects]  # from `folder`
    left = [path for path in objects if path.split("/", 1)[0] in RUN_OUTPUTS]
    staged = _below(objects, f"{RUNS_DIR}/.{run}.partial")
    done = _below(objects, f"{RUNS_DIR}/{run}")
    if done and left:
        raise _conflict(storage, final, run, _items(left))
    if not left and not staged:
        return final if done else None
    if left:  # the first step: every output into the staging prefix, then out of its place
        await _copy(storage, folder, staging, left, set(staged), run=run)
        await _each(lambda path: storage.delete(join_key(folder, path)), left)
        staged = sorted({*staged, *left})
    # The second step: the staging prefix into runs/<run>/, then emptied (last: the mark).
    await _copy(storage, staging, final, staged, set(done), run=run)
    await _each(lambda path: storage.delete(join_key(staging, path)), staged)
    return final


def _below(objects: Iterable[str], prefix: str) -> list[str]:
    """The paths of `objects` under `prefix/`, named from it."""
    cut = len(prefix) + 1
    return [path[cut:] for path in objects if path.startswith(f"{prefix}/")]


def _items(paths: Iterable[str]) -> list[str]:
    """The run outputs `paths` belong to, in `RUN_OUTPUTS` order (as the local move names)."""
    tops = {path.split("/", 1)[0] for path in paths}
    return [name for name in RUN_OUTPUTS if name in tops]


def _conflict(storage: Storage, key: str, run: int, names: list[str]) -> RunArchiveConflictError:
    where = f"{storage.url}/{key}"
    aside = f"aws s3 mv --recursive {where}/ {where}.old/"
    return RunArchiveConflictError(where, run, names, aside=aside)


async def _copy(
    storage: Storage, source: str, target: str, paths: list[str], there: set[str], *, run: int
) -> None:
    """Copy each of `paths` from the prefix `source` to `target`; one of `there` (already
    under `target`) only when its bytes differ, and then the move stops as a conflict."""
    clashes: list[str] = []

    async def copy(path: str) -> None:
        data = await storage.read(join_key(source, path))
        if path in there:
            if await storage.read(join_key(target, path)) != data:
                clashes.append(path)
            return  # copied before a crash cut the move short
        await storage.write(join_key(target, path), data)

    await _each(copy, paths)
    if clashes:
        raise _conflict(storage, target, run, _items(clashes))


async def _each(action: Callable[[str], Awaitable[None]], paths: Iterable[str]) -> None:
    """`action` on each of `paths`, `COPIES_AT_ONCE` at a time; the first failure stops all."""
    limit = anyio.CapacityLimiter(COPIES_AT_ONCE)

    async def one(path: str) -> None:
        async with limit:
            await action(path)

    try:
        async with anyio.create_task_group() as group:
            for path in paths:
                group.start_soon(one, path)
    except BaseExceptionGroup as failed:
        # The failure itself, as one copy alone would raise it (a `StorageFailure` stays
        # one for the Scheduler to answer with), rather than the group that gathered it.
        cancelled = anyio.get_cancelled_exc_class()
        causes = [error for error in failed.exceptions if not isinstance(error, cancelled)]
        raise (causes or list(failed.exceptions))[0] from None
