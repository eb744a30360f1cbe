"""What `baton tail` keeps and where it reads: filters, rotated files, run separators.

A "run" here is one run of a scenario: its first submission is conversation `NAME`, a
resubmission after it ended `NAME@2`, and so on (README.md, "Scenarios"). A `baton run`
process writes no start record, and a scenario resumed by a restarted process goes on in
the same conversation, so the conversation is what tells runs apart.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from baton._suggest import did_you_mean
from baton.agents.messages import RUN_SEPARATOR, scenario_of
from baton.errors import BatonError
from baton.pipeline.errors import CommandLineError
from baton.pipeline.records import MemoryRecalled  # noqa: F401 - every layer's records registered
from baton.runtime.log_files import rotated_files
from baton.runtime.settings import read_config
from baton.runtime.token_records import events
from baton.server._tail import record_matches


def record_time(record: Mapping[str, Any]) -> datetime | None:
    """The record's `ts` as an aware datetime, or None when it has none that parses."""
    ts = record.get("ts")
    if not isinstance(ts, str):
        return None
    try:
        moment = datetime.fromisoformat(ts)
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def run_of(record: Mapping[str, Any]) -> str | None:
    """The scenario run a record belongs to (`NAME`, `NAME@2`, ...), or None (no scenario,
    or a conversation that is not one of its scenario's runs)."""
    scenario, conversation = record.get("scenario"), record.get("conversation")
    if not isinstance(conversation, str) or not isinstance(scenario, str):
        return None
    return conversation if scenario_of(conversation) == scenario else None


def run_number(run: str) -> int:
    """1 for `NAME`, N for `NAME@N`."""
    _, _, number = run.partition(RUN_SEPARATOR)
    return int(number) if number.isdigit() else 1


@dataclass(frozen=True)
class TailFilter:
    """The filters of one `baton tail`: actor, event (or family), scenario (or one run),
    and a start time. A record without a time that parses is kept by `since`."""

    actor: str | None = None
    event: str | None = None
    scenario: str | None = None
    since: datetime | None = None

    @property
    def shows_non_records(self) -> bool:
        """Whether a line that is not a record is shown: only when nothing filters, as no
        filter can tell whether it passes."""
        return (self.actor, self.event, self.scenario, self.since) == (None, None, None, None)

    def matches(self, record: Mapping[str, Any]) -> bool:
        if not record_matches(record, actor=self.actor, event=self.event):
            return False
        if self.scenario is not None and not self._in_scenario(record):
            return False
        if self.since is not None:
            moment = record_time(record)
            if moment is not None and moment < self.since:
                return False
        return True

    def _in_scenario(self, record: Mapping[str, Any]) -> bool:
        assert self.scenario is not None
        conversation = record.get("conversation")
        if RUN_SEPARATOR in self.scenario:  # one run: `NAME@2`
            return conversation == self.scenario
        if record.get("scenario") == self.scenario:
            return True
        return isinstance(conversation, str) and scenario_of(conversation) == self.scenario


class RunSeparators:
    """The separator line to print before the first record of each scenario run seen."""

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def before(self, record: Mapping[str, Any]) -> str | None:
        run = run_of(record)
        if run is None or run in self._seen:
            return None
        self._seen.add(run)
        scenario = scenario_of(run)
        return f"---- {scenario} run {run_number(run)} ({run}) ----"


def log_files(path: Path, *, rotated: bool) -> list[Path]:
    """The token log's files oldest first: its rotated files when `rotated`, then the
    current one."""
    return [*rotated_files(path), path] if rotated else [path]


def log_lines(path: Path) -> Iterator[tuple[Path, int, bytes]]:
    """Every non-blank line of the token log at `path`, rotated files first (oldest first),
    with its file and line number; read a line at a time, so a log of many rotated files is
    never held whole. Blocks: it reads the files."""
    for file in log_files(path, rotated=True):
        try:
            handle = file.open("rb")
        except FileNotFoundError:
            continue  # rotated away meanwhile, or never written
        with handle:
            # Split on b"\n" only, as the writer does: a record may hold U+2028.
            for number, raw in enumerate(handle, start=1):
                if raw.strip():
                    yield file, number, raw


EVENTS = events()
EVENT_FAMILIES: tuple[str, ...] = tuple(sorted({event.split(".")[0] for event in EVENTS}))


def check_event(event: str) -> None:
    """`CommandLineError` naming the known events unless `event` is one or a family."""
    if event in EVENTS or event in EVENT_FAMILIES:
        return
    raise CommandLineError(
        f"unknown event {event!r} — known: {', '.join(sorted(EVENTS))}, or a family: "
        f"{', '.join(EVENT_FAMILIES)}"
    )


def configured_actors(workspace: Path) -> set[str]:
    """The pipeline's actors and every `[actors.<name>]` table of the workspace's baton.toml
    (read as written: `baton run` is the one that validates it)."""
    # The agents' settings and the pipeline's messages, loaded by `--actor` alone
    # (docs/architecture.md, "What a command imports").
    from baton.pipeline.defaults import DEFAULT_AGENTS  # noqa: PLC0415
    from baton.pipeline.scenario_state import SCHEDULER  # noqa: PLC0415

    names = {SCHEDULER, *DEFAULT_AGENTS}
    with contextlib.suppress(BatonError, OSError):
        tables = read_config(workspace)[0].get("actors")
        if isinstance(tables, Mapping):
            names.update(str(name) for name in tables)
    return names


def check_actor(actor: str, configured: Iterable[str], logged: Iterable[str]) -> None:
    """`CommandLineError` naming the known actors unless `actor` is one of them."""
    known = sorted({*configured, *logged})
    if actor in known:
        return
    raise CommandLineError(
        f"unknown actor {actor!r}{did_you_mean(actor, known)} — known: {', '.join(known)} "
        "(the configured actors and those in the token log)"
    )


def check_scenario(scenario: str, folders: Iterable[str], logged: Iterable[str]) -> None:
    """`CommandLineError` naming the known scenarios unless `scenario` (`NAME` or one run,
    `NAME@N`) is one of them: a tail that would print nothing for a typo says so instead."""
    known = sorted({*folders, *logged})
    if scenario_of(scenario) in known or scenario in known:
        return
    listed = ", ".join(known) if known else "none yet"
    raise CommandLineError(
        f"unknown scenario {scenario!r}{did_you_mean(scenario_of(scenario), known)} — known: "
        f"{listed} (the workspace's scenarios and those in the token log)"
    )
