"""What `baton report` shows, gathered from token-log records (README.md, "Token report").

The records are those of docs/token-log.md, "Fields": each `model.call` becomes a point on
its actor's lane (context size against threshold and window) and a row of the cost table;
each `context.compacted` a marker; each `handoff.sent` an event between two lanes. The
x position of everything is its rank in time among the kept records, so a burst of calls and
a long pause take the same room per record and every lane shares one axis. A scenario's page
draws one run, the latest unless one is named, and lists the others (`_report_runs`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton.agents.messages import RUN_SEPARATOR, scenario_of
from baton.errors import UsageError
from baton.models.call_tally import CallTally, token_count
from baton.models.pricing import PRICES, ModelPrice
from baton.pipeline.defaults import DEFAULT_AGENTS
from baton.pipeline.errors import CommandLineError
from baton.pipeline.scenario_state import SCHEDULER
from baton.server._report_runs import RUN_EVENTS, RunSummary, run_conversation, summarize_runs
from baton.server._tail_filters import TailFilter, log_lines, run_of

APPROVED = "init_to_execute"
"""The Scheduler dispatches a design to Execute only once it is approved (by `baton approve`
or by `--auto-approve`), so its `handoff.sent` of this type is where the approval shows."""


@dataclass(frozen=True, slots=True)
class CallPoint:
    """One `model.call` on its lane."""

    x: int
    context: int
    threshold: int
    window: int


@dataclass(frozen=True, slots=True)
class Compaction:
    """One `context.compacted`: the context went from `before` to `after` tokens."""

    x: int
    ts: str
    before: int
    after: int
    mode: str


@dataclass(frozen=True, slots=True)
class Event:
    """A handoff between two actors; `approval` when it is the dispatch of an approved design."""

    x: int
    ts: str
    kind: str  # "handoff" | "approval"
    handoff_type: str
    source: str
    target: str
    package_tokens: int


@dataclass(slots=True)
class Lane:
    """One actor's model calls and compactions, in time order."""

    actor: str
    points: list[CallPoint] = field(default_factory=list)
    compactions: list[Compaction] = field(default_factory=list)

    @property
    def peak(self) -> int:
        return max((point.context for point in self.points), default=0)


@dataclass(slots=True)
class UsageRow:
    """The calls of one actor on one model: counts, token sums and estimated cost."""

    actor: str
    model: str
    tally: CallTally = field(default_factory=CallTally)
    # For lines written before `cost_usd`.
    prices: Mapping[str, ModelPrice] = field(default_factory=lambda: PRICES)

    @property
    def cost(self) -> float | None:
        """Estimated USD; None when a price it needs is unknown (`CallTally.cost`)."""
        return self.tally.cost(self.model, self.prices)


@dataclass(slots=True)
class Report:
    """Everything the page shows for one scope (a scenario, one run of it, or the whole log)."""

    scope: str
    lanes: list[Lane]
    events: list[Event]
    rows: list[UsageRow]
    times: list[str]  # the `ts` of each record placed on the x axis, by x
    skipped_lines: int = 0
    runs: list[RunSummary] = field(default_factory=list)  # the scenario's (all: every one)
    run: RunSummary | None = None  # the run drawn; None: the whole log

    @property
    def length(self) -> int:
        """How many records are placed on the x axis."""
        return len(self.times)

    @property
    def total_cost(self) -> tuple[float, bool]:
        """The sum of the known costs, and whether every row's cost is known."""
        costs = [row.cost for row in self.rows]
        return sum(cost for cost in costs if cost is not None), None not in costs


# --- reading -------------------------------------------------------------------------------


SHOWN = frozenset({"model.call", "context.compacted", "handoff.sent"})
"""The events the page draws; the others but `RUN_EVENTS` are counted but not kept."""


@dataclass(slots=True)
class LogRead:
    """The records `baton report` uses, and what else the files held."""

    records: list[dict[str, Any]] = field(default_factory=list)
    other_records: int = 0  # records of events the page does not draw
    skipped_lines: int = 0  # lines that are not a JSON object


def read_records(path: Path) -> LogRead:
    """The drawn records of the token log at `path`, rotated files first (oldest first),
    read a line at a time so that a log of many rotated files is never held whole."""
    read = LogRead()
    for _, _, raw in log_lines(path):
        try:
            record = json.loads(raw)
        except ValueError:
            record = None
        take(read, record)
    return read


def take(read: LogRead, record: object) -> None:
    """Count `record` (a parsed line; anything but a JSON object is a torn line) into `read`."""
    if not isinstance(record, dict):
        # A process killed mid-write leaves a torn line.
        read.skipped_lines += 1
    elif record.get("event") in SHOWN:
        read.records.append(record)
    elif record.get("event") in RUN_EVENTS:
        read.records.append(record)
        read.other_records += 1
    else:
        read.other_records += 1


def known_scenarios(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """The scenarios the records belong to, and each run after the first (`NAME@2`)."""
    names: set[str] = set()
    for record in records:
        scenario, conversation = record.get("scenario"), record.get("conversation")
        if isinstance(scenario, str):
            names.add(scenario)
            if isinstance(conversation, str) and scenario_of(conversation) == scenario:
                names.add(conversation)
    return sorted(names)


def _text(record: Mapping[str, Any], key: str) -> str:
    value = record.get(key)
    return value if type(value) is str else ""


def select(records: Sequence[Mapping[str, Any]], scenario: str) -> list[Mapping[str, Any]]:
    """The records of `scenario` (all its runs; `NAME@2`: that run only).

    The Scheduler's own handoff lines carry no scenario; one belongs to the scenario when an
    agent of it sent a package of the same type and size (the Scheduler passes the package
    on unchanged, so its estimate is the same).
    """
    return _select(records, TailFilter(scenario=scenario).matches)


def select_run(records: Sequence[Mapping[str, Any]], conversation: str) -> list[Mapping[str, Any]]:
    """The records of one run, by its conversation (`NAME` is the first run only), with the
    Scheduler's handoff lines that carry no scenario, as `select` finds them."""
    return _select(records, lambda record: run_of(record) == conversation)


def _select(
    records: Sequence[Mapping[str, Any]], matches: Callable[[Mapping[str, Any]], bool]
) -> list[Mapping[str, Any]]:
    kept: list[Mapping[str, Any]] = []
    packages: set[tuple[str, int]] = set()
    for record in records:
        if matches(record):
            kept.append(record)
            if str(record.get("event", "")).startswith("handoff."):
                packages.add((_text(record, "handoff_type"), token_count(record, "package_tokens")))
    for record in records:
        if (
            record.get("scenario") is None
            and str(record.get("event", "")).startswith("handoff.")
            and (_text(record, "handoff_type"), token_count(record, "package_tokens")) in packages
        ):
            kept.append(record)
    return kept


# --- aggregating ---------------------------------------------------------------------------


def _lane_order(actor: str) -> tuple[int, str]:
    agents = list(DEFAULT_AGENTS)
    if actor in agents:
        return (agents.index(actor), actor)
    return (len(agents) + (actor != SCHEDULER), actor)


def build_report(
    records: Iterable[Mapping[str, Any]],
    scope: str,
    skipped: int = 0,
    *,
    prices: Mapping[str, ModelPrice] = PRICES,
    runs: Sequence[RunSummary] = (),
    run: RunSummary | None = None,
) -> Report:
    """Lanes, events and the cost table of `records` (in any order; placed by `ts`); lines
    without `cost_usd` are priced from their tokens with `prices`."""
    shown = [
        record
        for record in records
        if record.get("event") in SHOWN and isinstance(record.get("actor"), str)
    ]
    # A stable sort: records of the same instant keep the order they were written in.
    shown.sort(key=lambda record: _text(record, "ts"))
    lanes: dict[str, Lane] = {}
    rows: dict[tuple[str, str], UsageRow] = {}
    events: list[Event] = []

    def lane(actor: str) -> Lane:
        return lanes.get(actor) or lanes.setdefault(actor, Lane(actor))

    for x, record in enumerate(shown):
        actor = str(record["actor"])
        event = record["event"]
        if event == "model.call":
            lane(actor).points.append(
                CallPoint(
                    x,
                    token_count(record, "context_tokens"),
                    token_count(record, "compact_threshold"),
                    token_count(record, "context_window"),
                )
            )
            model = _text(record, "model") or "?"
            row = rows.get((actor, model))
            if row is None:
                row = rows[(actor, model)] = UsageRow(actor, model, prices=prices)
            row.tally.add(record)
        elif event == "context.compacted":
            lane(actor).compactions.append(
                Compaction(
                    x,
                    _text(record, "ts"),
                    token_count(record, "tokens_before"),
                    token_count(record, "tokens_after"),
                    _text(record, "mode"),
                )
            )
        else:
            source, target = _text(record, "from") or actor, _text(record, "to")
            handoff_type = _text(record, "handoff_type")
            approval = source == SCHEDULER and handoff_type == APPROVED
            events.append(
                Event(
                    x,
                    _text(record, "ts"),
                    "approval" if approval else "handoff",
                    handoff_type,
                    source,
                    target,
                    token_count(record, "package_tokens"),
                )
            )
            lane(source)
            if target:
                lane(target)
    return Report(
        scope=scope,
        lanes=sorted(lanes.values(), key=lambda found: _lane_order(found.actor)),
        events=events,
        rows=sorted(rows.values(), key=lambda row: (_lane_order(row.actor), row.model)),
        times=[_text(record, "ts") for record in shown],
        skipped_lines=skipped,
        runs=list(runs),
        run=run,
    )


def load_reports(
    log: Path | str,
    scenario: str | None,
    *,
    prices: Mapping[str, ModelPrice] = PRICES,
    read: LogRead | None = None,
) -> list[Report]:
    """The report of the token log at `log` (rotated files included; or of the records
    `read` already holds, `log` then naming where they came from) for `scenario` (its latest
    run; `NAME@N`: that run), or for the whole log; then, for a scenario, that of each of its
    runs. `UsageError` for a missing or empty log, `CommandLineError` for a scenario or run
    the log does not know."""
    if read is None:
        assert isinstance(log, Path)
        read = read_records(log)
    records, skipped = read.records, read.skipped_lines
    if not any(record.get("event") in SHOWN for record in records):
        what = "no model calls, compactions or handoffs" if read.other_records else "no records"
        raise UsageError(
            f"{what} in the token log at {log} — run `baton run` in this workspace first"
        )
    if scenario is None:
        runs = summarize_runs(records, None)
        return [build_report(records, "all", skipped, prices=prices, runs=runs)]
    runs = summarize_runs(records, scenario_of(scenario))
    wanted = run_conversation(scenario)
    shown = (
        runs[-1:]
        if RUN_SEPARATOR not in scenario
        else [run for run in runs if run.conversation == wanted]
    )
    if not shown:
        known = known_scenarios(records)
        what = "run" if RUN_SEPARATOR in scenario else "scenario"
        raise CommandLineError(
            f"unknown {what} {scenario!r} — known: {', '.join(known) or 'none'} (the "
            "scenarios in the token log)"
        )

    def of(run: RunSummary, scope: str) -> Report:
        return build_report(
            select_run(records, run.conversation), scope, skipped, prices=prices, runs=runs, run=run
        )

    return [of(shown[0], scenario), *(of(run, run.name) for run in runs)]


def load_report(
    log: Path, scenario: str | None, *, prices: Mapping[str, ModelPrice] = PRICES
) -> Report:
    """The page's report of `load_reports`: the whole log's, or the run's `scenario` names."""
    return load_reports(log, scenario, prices=prices)[0]
