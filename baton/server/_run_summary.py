"""The end-of-run summary of `baton run` (README.md, "What `baton run` shows"), and the
tally it and the live view are folded from: token-log records, one at a time.

Costs are estimates from list prices (`baton.models.pricing`; docs/models.md, "Prices"); a
model without a known price shows "—" with a footnote and is left out of the total.

A run's outputs are listed from the workspace folder, or, with `[storage] url`, from the
bucket (`stored_outputs`, awaited before the summary is printed: docs/storage.md, "What is
stored where").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from baton._write_rules import SCENARIOS_DIR
from baton.errors import BatonError
from baton.models.call_tally import CallTally, token_count
from baton.pipeline.run_archive import earlier_runs, runs_line, stored_earlier_runs
from baton.pipeline.scenario_state import SCHEDULER, ScenarioState
from baton.runtime.log_files import PROCESS_LOG, TOKEN_LOG

if TYPE_CHECKING:
    from baton.storage.protocol import Storage

NO_SCENARIO = "(no scenario)"


@dataclass(slots=True)
class AgentProgress:
    """Where one agent (an actor in one scenario) stands, from its latest records."""

    actor: str
    scenario: str
    model: str = ""
    turn: int = 0
    last_tool: str | None = None
    input_tokens: int = 0  # uncached input and cache writes: tokens the model read afresh
    cached_tokens: int = 0
    output_tokens: int = 0
    context_tokens: int = 0
    compact_threshold: int = 0
    compactions: int = 0
    seen: int = 0  # the record number of its latest record: who is working now


@dataclass(slots=True)
class RunTally:
    """Everything the view and the summary show, folded from token-log records."""

    models: dict[str, CallTally] = field(default_factory=dict)
    agents: dict[tuple[str, str], AgentProgress] = field(default_factory=dict)
    compactions: int = 0
    handoffs: int = 0
    restarts: int = 0
    dead_letters: int = 0
    records: int = 0

    def add(self, record: Mapping[str, Any]) -> str | None:
        """Fold in one record; a plain progress line when it is worth one, else None."""
        self.records += 1
        event = record.get("event")
        actor = str(record.get("actor") or "-")
        scenario = str(record.get("scenario") or NO_SCENARIO)
        if event == "model.call":
            self._model_call(record, self._agent(actor, scenario))
            return None
        if event == "context.compacted":
            self.compactions += 1
            self._agent(actor, scenario).compactions += 1
            return (
                f"{scenario}: {actor} compacted its context "
                f"{_n(record.get('tokens_before'))} -> {_n(record.get('tokens_after'))} tokens"
            )
        if event == "handoff.sent":
            sender = str(record.get("from") or actor)
            if sender == SCHEDULER:
                return None  # the scheduler passing an agent's handoff on: counted once
            self.handoffs += 1
            return f"{scenario}: {sender} handed off ({record.get('handoff_type', '?')})"
        if event == "actor.restarted":
            self.restarts += 1
            return f"{actor} restarted ({record.get('reason', '?')})"
        if event == "message.dead_lettered":
            self.dead_letters += 1
            return (
                f"{actor}: a {record.get('message_type', '?')} message was dead-lettered "
                f"({record.get('reason', '?')})"
            )
        return None

    def _agent(self, actor: str, scenario: str) -> AgentProgress:
        agent = self.agents.get((scenario, actor))
        if agent is None:
            agent = self.agents[(scenario, actor)] = AgentProgress(actor, scenario)
        agent.seen = self.records
        return agent

    def _model_call(self, record: Mapping[str, Any], agent: AgentProgress) -> None:
        model = str(record.get("model") or "?")
        fresh = token_count(record, "input_tokens")
        written = token_count(record, "cache_creation_input_tokens")
        read = token_count(record, "cache_read_input_tokens")
        output = token_count(record, "output_tokens")
        self.models.setdefault(model, CallTally()).add(record)
        agent.model = model
        agent.turn = token_count(record, "turn")
        tools = record.get("tools") or []
        if tools:
            agent.last_tool = str(tools[-1])
        agent.input_tokens += fresh + written
        agent.cached_tokens += read
        agent.output_tokens += output
        agent.context_tokens = token_count(record, "context_tokens")
        agent.compact_threshold = token_count(record, "compact_threshold")

    @property
    def calls(self) -> int:
        """Model calls of every model."""
        return sum(tally.calls for tally in self.models.values())


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def counts_line(tally: RunTally) -> str:
    """`90 model calls · 4 compactions · 4 handoffs`."""
    return (
        f"{_plural(tally.calls, 'model call')} · {_plural(tally.compactions, 'compaction')} · "
        f"{_plural(tally.handoffs, 'handoff')}"
    )


def _n(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def _usd(cost: float) -> str:
    return f"${cost:,.2f}"


def summary_lines(
    tally: RunTally,
    states: Iterable[ScenarioState] = (),
    *,
    workspace: Path = Path(),
    reports: Mapping[str, Path] | None = None,
    outputs: Mapping[str, list[str]] | None = None,
) -> list[str]:
    """The end-of-run summary: calls and tokens per model, estimated cost, what was written
    (`reports`: the report written as each scenario ended; `outputs`: each scenario's
    outputs as `stored_outputs` listed them in a bucket, else they are the workspace's)."""
    lines = [f"baton: summary · {counts_line(tally)}"]
    if tally.restarts or tally.dead_letters:
        lines.append(f"  {tally.restarts} restarts · {tally.dead_letters} dead letters")
    header = ("model", "calls", "input", "cache write", "cache read", "output", "cost")
    rows: list[tuple[str, ...]] = []
    total = CallTally()
    known_cost = 0.0
    unpriced: list[str] = []
    for model, counts in sorted(tally.models.items()):
        cost = counts.cost(model)
        if cost is None:
            unpriced.append(model)
        else:
            known_cost += cost
        rows.append(
            (
                model,
                _n(counts.calls),
                _n(counts.input_tokens),
                _n(counts.cache_creation_input_tokens),
                _n(counts.cache_read_input_tokens),
                _n(counts.output_tokens),
                "—*" if cost is None else _usd(cost),
            )
        )
        total.merge(counts)
    if rows:
        total_cost = _usd(known_cost) + ("*" if unpriced else "")
        if unpriced and known_cost == 0.0 and len(unpriced) == len(rows):
            total_cost = "—*"
        rows.append(
            (
                "total",
                _n(total.calls),
                _n(total.input_tokens),
                _n(total.cache_creation_input_tokens),
                _n(total.cache_read_input_tokens),
                _n(total.output_tokens),
                total_cost,
            )
        )
        widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
        for row in (header, *rows):
            cells = [row[0].ljust(widths[0])]
            cells += [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
            lines.append("  " + "  ".join(cells).rstrip())
        lines.append(
            "  costs are estimates from list prices, cache writes at the 5-minute rate "
            '(docs/models.md, "Prices")'
        )
        if unpriced:
            lines.append(
                f"  * no price known for {', '.join(unpriced)}: "
                "the total counts only the models with a price"
            )
    else:
        lines.append("  no model calls")
    lines.extend(_artifact_lines(states, workspace, reports or {}, outputs or {}))
    lines.append(
        f"  logs: {workspace / PROCESS_LOG} · token log {workspace / TOKEN_LOG} "
        "(`baton tail` reads it)"
    )
    return lines


def _artifact_lines(
    states: Iterable[ScenarioState],
    workspace: Path,
    reports: Mapping[str, Path],
    outputs: Mapping[str, list[str]],
) -> list[str]:
    lines: list[str] = []
    for state in states:
        which = f"run {state.run}, " if state.run > 1 else ""
        lines.append(f"  {state.scenario}: {state.phase} ({which}iteration {state.iteration})")
        if state.scenario in reports:
            lines.append(f"    report: {reports[state.scenario]}")
        if state.scenario in outputs:
            lines.extend(outputs[state.scenario])
            continue
        if state.last_report is not None:
            lines.extend(_output_lines(workspace / state.last_report))
        # Only this run's outputs are beside its last report; the earlier runs' were moved
        # aside as it started (docs/handoffs.md, "Earlier runs").
        folder = workspace / SCENARIOS_DIR / state.scenario
        earlier = [run for run in earlier_runs(folder) if run < state.run]
        if earlier:
            lines.append(f"    {runs_line(folder, earlier)}")
    return lines


def _output_lines(report: Path) -> list[str]:
    outputs = report.parent.parent
    iterations = sorted(
        (path for path in outputs.glob("iteration_*") if path.is_dir()),
        key=lambda path: (len(path.name), path.name),
    )
    lines: list[str] = []
    if iterations:
        lines.append(f"    iteration outputs: {', '.join(f'{path}/' for path in iterations)}")
    lines.append(f"    last iteration report: {report}")
    return lines


async def stored_outputs(storage: Storage, states: Iterable[ScenarioState]) -> dict[str, list[str]]:
    """Each scenario's output lines of the summary, listed from the bucket `storage` (the
    lines `summary_lines` draws from the workspace folder otherwise), named by their urls.
    A listing the store refuses is one line saying so: the summary is still printed."""
    found: dict[str, list[str]] = {}
    for state in states:
        folder = f"{SCENARIOS_DIR}/{state.scenario}"
        try:
            found[state.scenario] = await _stored_lines(storage, state, folder)
        except BatonError as error:
            found[state.scenario] = [f"    outputs in {storage.url}/{folder}/ ({error})"]
    return found


async def _stored_lines(storage: Storage, state: ScenarioState, folder: str) -> list[str]:
    lines: list[str] = []
    if state.last_report is not None:
        report = PurePosixPath(state.last_report)
        outputs = report.parent.parent
        listing = await storage.list(outputs.as_posix(), recursive=False)
        names = sorted(
            (name for name in listing.folders if name.startswith("iteration_")),
            key=lambda name: (len(name), name),
        )
        if names:
            where = f"{storage.url}/{outputs}"
            lines.append(f"    iteration outputs: {', '.join(f'{where}/{n}/' for n in names)}")
        lines.append(f"    last iteration report: {storage.url}/{report}")
    earlier = [run for run in await stored_earlier_runs(storage, folder) if run < state.run]
    if earlier:
        lines.append(f"    {runs_line(f'{storage.url}/{folder}', earlier)}")
    return lines
