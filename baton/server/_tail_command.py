"""`baton tail`: read the token log file, filter it, print it (README.md, "Running baton").

It reads the files directly, so it works whether or not a runtime is running. `-n` and
`--since` reach back into the rotated files (`tokens.jsonl.1`, ...), oldest first; without
them only the current file is read, as the log is followed.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio

from baton._write_rules import SCENARIOS_DIR
from baton.agents.messages import scenario_of
from baton.errors import UsageError
from baton.server._log_location import checked_token_log
from baton.server._render import render_record
from baton.server._tail import follow_lines, read_lines, record_problem
from baton.server._tail_filters import (
    RunSeparators,
    TailFilter,
    check_actor,
    check_event,
    check_scenario,
    configured_actors,
    log_files,
)

Print = Callable[[str], None]


@dataclass(frozen=True)
class TailOptions:
    """What `baton tail` was asked for."""

    workspace: Path
    follow: bool = False
    json: bool = False
    lines: int | None = None  # `-n`: only the last N matching lines (then follow)
    actor: str | None = None
    event: str | None = None
    scenario: str | None = None
    since: datetime | None = None


class _Printer:
    """Turns each line into what is printed (or nothing), with a separator between runs;
    with `-n` it holds the last N until the history has been read."""

    def __init__(self, options: TailOptions, out: Print) -> None:
        self._json = options.json
        self._filter = TailFilter(options.actor, options.event, options.scenario, options.since)
        self._out = out
        self._separators = RunSeparators()
        self._held: deque[tuple[str, dict[str, Any] | None]] | None = (
            deque(maxlen=options.lines) if options.lines is not None else None
        )

    def line(self, line: str) -> None:
        try:
            decoded = json.loads(line)
        except json.JSONDecodeError:
            decoded = None
        record = decoded if isinstance(decoded, dict) else None
        if record is None:
            if not self._filter.shows_non_records:
                return
        elif not self._filter.matches(record):
            return
        if self._held is not None:
            self._held.append((line, record))
        else:
            self._show(line, record)

    def caught_up(self) -> None:
        """The history has been read: print what `-n` held, then print as lines come."""
        held, self._held = self._held, None
        for line, record in held or ():
            self._show(line, record)

    def _show(self, line: str, record: dict[str, Any] | None) -> None:
        if self._json:
            self._out(line)
            return
        if record is None:
            self._out(f"(not a JSON record) {line}")
            return
        separator = self._separators.before(record)
        if separator is not None:
            self._out(separator)
        problem = record_problem(record)
        # A line of the wrong shape (written by hand, or by something else) is shown as it
        # is, so the reader sees it, instead of ending the tail.
        if problem is None:
            self._out(render_record(record))
        else:
            self._out(f"(not a token-log record: {problem}) {line}")


async def _logged(files: list[Path], field: str, wanted: str) -> set[str]:
    """The values of `field` in the records of `files` (a scenario field as its scenario's
    name), stopping early once `wanted` is among them."""
    found: set[str] = set()
    for file in files:
        async for line in read_lines(file):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            value = record.get(field) if isinstance(record, dict) else None
            if isinstance(value, str):
                found.add(scenario_of(value) if field == "scenario" else value)
                if wanted in found:
                    return found
    return found


def _scenario_folders(workspace: Path) -> list[str]:
    folder = workspace / SCENARIOS_DIR
    return [entry.name for entry in folder.iterdir() if entry.is_dir()] if folder.is_dir() else []


async def _check_scenario(options: TailOptions, path: Path) -> None:
    assert options.scenario is not None
    folders = await anyio.to_thread.run_sync(_scenario_folders, options.workspace)
    wanted = scenario_of(options.scenario)
    if wanted in folders:
        return
    logged = await _logged(log_files(path, rotated=True), "scenario", wanted)
    check_scenario(options.scenario, folders, logged)


async def _check_actor(options: TailOptions, path: Path) -> None:
    assert options.actor is not None
    configured = await anyio.to_thread.run_sync(configured_actors, options.workspace)
    if options.actor in configured:
        return
    logged = await _logged(log_files(path, rotated=True), "actor", options.actor)
    check_actor(options.actor, configured, logged)


async def _history(files: list[Path]) -> AsyncGenerator[str, None]:
    for file in files:
        async for line in read_lines(file):
            yield line


async def tail(options: TailOptions, out: Print) -> None:
    """Print the token log of `options.workspace` as asked; endless with `follow`."""
    path = await anyio.to_thread.run_sync(checked_token_log, options.workspace)
    if options.event is not None:
        check_event(options.event)
    rotated = options.lines is not None or options.since is not None
    files = await anyio.to_thread.run_sync(lambda: log_files(path, rotated=rotated))
    present = [file for file in files if await anyio.Path(file).is_file()]
    if not options.follow and not present:
        raise UsageError(
            f"no token log at {path} yet — start `baton run` in {options.workspace}, "
            "or wait for it with `baton tail -f`"
        )
    if options.actor is not None:
        await _check_actor(options, path)
    if options.scenario is not None:
        await _check_scenario(options, path)
    printer = _Printer(options, out)
    # Closed as soon as the tail ends (Ctrl+C, a closed pipe), not when collected.
    async with aclosing(_history(files[:-1])) as history:
        async for line in history:
            printer.line(line)
    if options.follow:
        async with aclosing(follow_lines(path, on_caught_up=printer.caught_up)) as lines:
            async for line in lines:
                printer.line(line)
    else:
        async with aclosing(read_lines(path)) as lines:
            async for line in lines:
                printer.line(line)
        printer.caught_up()
