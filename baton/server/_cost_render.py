"""How `baton cost` prints its bills: one table per agent (README.md, "What a run would have
cost")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from baton.pipeline.what_if import AgentWhatIf, Bill

BILLED = (
    "billed = input-token equivalents: uncached 1x, cache write 1.25x (5 minutes) or 2x "
    "(1 hour), cache read 0.1x; cache 1h+5m: baton's breakpoints (an hour for what is re-sent "
    "after a wait, 5 minutes for the newest message)"
)


def _usd(value: float | None) -> str:
    return "—" if value is None else f"${value:,.4f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.2f}%"


def _line(label: str, cache: str, bill: Bill, last: str, width: int) -> str:
    return (
        f"  {label:<{width}}  {cache:<5}  {bill.calls:>5}  {bill.billed:>11,.0f}  "
        f"{bill.output_tokens:>9,}  {_usd(bill.cost_usd):>10}  {last}"
    )


def _agent_table(result: AgentWhatIf) -> list[str]:
    logged = ", ".join(result.logged_models) or "no calls"
    priced = f"priced at {result.priced_at}"
    if result.priced_as_configured:
        priced += " (its configured model: the offline model costs nothing)"
    lines = [f"{result.actor} · {', '.join(result.conversations)} · logged: {logged} · {priced}"]
    width = max(24, *(len(row.label) for row in result.rows))
    header = (
        f"  {'policy':<{width}}  {'cache':<5}  {'calls':>5}  {'billed':>11}  "
        f"{'output':>9}  {'cost':>10}  vs the run"
    )
    lines.append(header)
    for row in result.rows:
        ratio = "—" if row.ratio is None else f"{row.ratio:.3f}x"
        mark = "  ← the run's policy" if row.used else ""
        lines.append(_line(row.label, row.cache, row.bill, ratio + mark, width))
        if row.used:
            difference = (
                f"difference {_pct(result.difference_billed_pct)} billed, "
                f"{_pct(result.difference_cost_pct)} cost"
            )
            lines.append(_line("  logged (the token log)", "", result.logged, difference, width))
    notes = result.notes + list(
        dict.fromkeys(f"{row.label}: {note}" for row in result.rows for note in row.notes)
    )
    lines += [f"  note: {note}" for note in notes]
    return lines


def render_what_if(results: Sequence[AgentWhatIf], *, workspace: Path, scenario: str | None) -> str:
    """The tables of `baton cost --what-if`."""
    scope = scenario or "every run in the journal"
    lines = [
        f"what the same run would have cost · {workspace} · {scope}",
        f"  {BILLED}; the same replies and tool results, each request billed through the "
        "prompt cache at the time the token log gives",
    ]
    for result in results:
        lines += ["", *_agent_table(result)]
    return "\n".join(lines)


def render_bills(bills: Sequence[Mapping[str, Any]]) -> str:
    """The logged bills of `baton cost`, one line per agent (`logged_bills`)."""
    width = max(8, *(len(bill["actor"]) for bill in bills))
    lines = [
        f"  {'agent':<{width}}  {'calls':>5}  {'billed':>11}  {'output':>9}  {'cost':>10}  model",
    ]
    for bill in bills:
        logged = Bill.model_validate(bill["logged"])
        models = ", ".join(bill["logged_models"]) or "no calls"
        lines.append(
            f"  {bill['actor']:<{width}}  {logged.calls:>5}  {logged.billed:>11,.0f}  "
            f"{logged.output_tokens:>9,}  {_usd(logged.cost_usd):>10}  {models} · priced at "
            f"{bill['priced_at']}"
        )
    lines.append(f"  {BILLED}; `baton cost --what-if` adds other context policies")
    return "\n".join(lines)
