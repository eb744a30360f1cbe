"""A scenario's runs as `baton report` lists them: each run's dates, outcome and iterations
(README.md, "Token report").

A run is one conversation of the scenario: `NAME` for the first submission, `NAME@N` for the
N-th (docs/token-log.md, "Fields"). Its outcome is the run's last `scenario.ended` line; each
iteration's outcome is its `iteration.ended` line. A run stopped at its spend cap and resumed
goes on in the same conversation, so a stopped run with records after its end is running.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from baton.agents.messages import RUN_SEPARATOR, scenario_conversation, scenario_of
from baton.server._tail_filters import run_number, run_of

Outcome = Literal["completed", "failed", "stopped", "running"]

ENDED = "scenario.ended"
ITERATION = "iteration.ended"
RUN_EVENTS = frozenset({ENDED, ITERATION})
"""The records a run's outcome and its iterations are read from (docs/token-log.md)."""


@dataclass(frozen=True, slots=True)
class IterationOutcome:
    """What the Scheduler decided on one iteration Execute reported."""

    iteration: int
    ts: str
    handoff_type: str
    verdict: str
    reason: str
    success_rate: float | None
    passed: int | None
    total: int | None


@dataclass(slots=True)
class RunSummary:
    """One run of a scenario: when it started and last wrote, and how it went."""

    conversation: str  # `NAME` or `NAME@N`
    started: str
    last: str
    outcome: Outcome = "running"
    reason: str = ""
    iterations: list[IterationOutcome] = field(default_factory=list)

    @property
    def scenario(self) -> str:
        return scenario_of(self.conversation)

    @property
    def number(self) -> int:
        return run_number(self.conversation)

    @property
    def name(self) -> str:
        """`NAME@N`, the first run too: what `baton report --scenario` takes for this run."""
        return f"{self.scenario}{RUN_SEPARATOR}{self.number}"


def run_conversation(name: str) -> str:
    """The conversation of a run named `NAME@N` (`NAME@1` is the first run, `NAME`)."""
    scenario, _, number = name.partition(RUN_SEPARATOR)
    return scenario_conversation(scenario, int(number)) if number.isdigit() else name


def _int(record: Mapping[str, Any], key: str) -> int | None:
    value = record.get(key)
    return value if type(value) is int else None


def _text(record: Mapping[str, Any], key: str) -> str:
    value = record.get(key)
    return value if type(value) is str else ""


def _iteration(record: Mapping[str, Any]) -> IterationOutcome:
    rate = record.get("success_rate")
    if type(rate) is int:
        rate = float(rate)
    return IterationOutcome(
        iteration=_int(record, "iteration") or 0,
        ts=_text(record, "ts"),
        handoff_type=_text(record, "handoff_type"),
        verdict=_text(record, "verdict"),
        reason=_text(record, "reason"),
        success_rate=rate if type(rate) is float else None,
        passed=_int(record, "passed_samples"),
        total=_int(record, "total_samples"),
    )


def summarize_runs(records: Iterable[Mapping[str, Any]], scenario: str | None) -> list[RunSummary]:
    """The runs of `scenario` (every scenario's when None) in the records, by scenario and
    run number."""
    ordered = sorted(records, key=lambda record: _text(record, "ts"))
    runs: dict[str, RunSummary] = {}
    for record in ordered:
        conversation = run_of(record)
        if conversation is None or scenario not in (None, scenario_of(conversation)):
            continue
        ts = _text(record, "ts")
        run = runs.get(conversation)
        if run is None:
            run = runs[conversation] = RunSummary(conversation, started=ts, last=ts)
        run.last = ts or run.last
        event = record.get("event")
        if event == ENDED:
            outcome = _text(record, "outcome")
            if outcome in ("completed", "failed", "stopped"):
                run.outcome = outcome  # type: ignore[assignment]  # checked just above
                run.reason = _text(record, "reason")
        elif event == ITERATION:
            run.iterations.append(_iteration(record))
        elif run.outcome == "stopped":
            # Only a run stopped at its cap goes on in the same conversation (`baton submit`
            # with a higher cap; README.md, "Spend cap"): a record after its end resumed it.
            run.outcome, run.reason = "running", ""
    return sorted(runs.values(), key=lambda run: (run.scenario, run.number))


def describe(run: RunSummary) -> str:
    """The run's outcome in a few words, with its reason."""
    if run.outcome == "running":
        return "not ended: still running, or interrupted"
    return f"{run.outcome}: {run.reason}" if run.reason else run.outcome


def samples(step: IterationOutcome) -> str:
    """The iteration's success rate, with the samples behind it when known: `80% (8/10)`."""
    if step.success_rate is None:
        return "—"
    rate = f"{step.success_rate:.0%}"
    if step.passed is None or step.total is None:
        return rate
    return f"{rate} ({step.passed:,}/{step.total:,})"
