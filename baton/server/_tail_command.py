"""`baton tail`: read the token log file, filter it, print it (README.md, "Running baton").

It reads the files directly, so it works whether or not a runtime is running. `-n` and
`--since` reach back into the rotated files (`tokens.jsonl.1`, ...), oldest first; without
them only the current file is read, as the log is followed. With `--mailbox redis://...` it
reads the stream every process of the deployment copies its lines to instead, whole, then
follows it (docs/token-log.md, "Across processes").
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
from baton.pipeline.errors import CommandLineError
from baton.runtime.settings import is_redis_url, load_settings
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
    mailbox: str | None = None  # `--mailbox redis://...`: read every process's stream


Lines = Callable[[], AsyncGenerator[str, None]]
"""Where the logged actors and scenarios are looked for: a fresh pass over the log each call."""


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


async def _logged(lines: Lines, field: str, wanted: str) -> set[str]:
    """The values of `field` in the records of `lines` (a scenario field as its scenario's
    name), stopping early once `wanted` is among them."""
    found: set[str] = set()
    async with aclosing(lines()) as logged:
        async for line in logged:
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


async def _check_filters(options: TailOptions, lines: Lines) -> None:
    """A usage error for an actor or scenario neither configured nor in `lines`."""
    if options.actor is not None:
        configured = await anyio.to_thread.run_sync(configured_actors, options.workspace)
        if options.actor not in configured:
            logged = await _logged(lines, "actor", options.actor)
            check_actor(options.actor, configured, logged)
    if options.scenario is not None:
        folders = await anyio.to_thread.run_sync(_scenario_folders, options.workspace)
        wanted = scenario_of(options.scenario)
        if wanted not in folders:
            logged = await _logged(lines, "scenario", wanted)
            check_scenario(options.scenario, folders, logged)


async def _history(files: list[Path]) -> AsyncGenerator[str, None]:
    for file in files:
        async for line in read_lines(file):
            yield line


def redis_source(workspace: Path, mailbox: str, command: str = "tail") -> tuple[str, str]:
    """`--mailbox`'s URL and the deployment's key prefix (`runtime.redis.prefix`), for
    `command` (tail, report) reading the token-log stream. Blocks: reads baton.toml."""
    config = load_settings(workspace, overrides={"runtime": {"mailbox": mailbox}})
    if not is_redis_url(config.runtime.mailbox):
        raise CommandLineError(
            f"--mailbox {mailbox!r}: {command} reads the token-log stream of a Redis "
            "mailbox; give redis://HOST:PORT/DB, or leave --mailbox out to read the file"
        )
    return config.runtime.mailbox, config.runtime.redis.prefix


def _redis_url(options: TailOptions) -> tuple[str, str]:
    assert options.mailbox is not None
    return redis_source(options.workspace, options.mailbox)


async def _tail_stream(options: TailOptions, out: Print) -> None:
    """`baton tail --mailbox redis://...`: every process's lines, from the shared stream."""
    url, prefix = await anyio.to_thread.run_sync(_redis_url, options)
    # Only with a Redis URL: `baton tail` on the file loads no redis-py.
    from baton.server._token_source import TokenSource  # noqa: PLC0415

    async with TokenSource.open(url, prefix) as source:

        async def lines() -> AsyncGenerator[str, None]:
            async for _, line in source.history():
                yield line

        await _check_filters(options, lines)
        printer = _Printer(options, out)
        after = "0-0"  # the entry read last: following goes on after it
        async with aclosing(source.history()) as history:
            async for entry_id, line in history:
                after = entry_id
                printer.line(line)
        if after == "0-0" and not options.follow:
            raise UsageError(
                f"no token-log lines in the stream {source.key} of {source.url} yet — start "
                "`baton run` with this --mailbox, or wait for them with `baton tail -f`"
            )
        printer.caught_up()
        if options.follow:
            async with aclosing(source.follow(after)) as entries:
                async for _, line in entries:
                    printer.line(line)


async def tail(options: TailOptions, out: Print) -> None:
    """Print the token log of `options.workspace` (or with `mailbox`, of every process of
    the deployment) as asked; endless with `follow`."""
    if options.event is not None:
        check_event(options.event)
    if options.mailbox is not None:
        await _tail_stream(options, out)
        return
    path = await anyio.to_thread.run_sync(checked_token_log, options.workspace)
    rotated = options.lines is not None or options.since is not None
    files = await anyio.to_thread.run_sync(lambda: log_files(path, rotated=rotated))
    present = [file for file in files if await anyio.Path(file).is_file()]
    if not options.follow and not present:
        raise UsageError(
            f"no token log at {path} yet — start `baton run` in {options.workspace}, "
            "or wait for it with `baton tail -f`"
        )
    await _check_filters(options, lambda: _history(log_files(path, rotated=True)))
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
