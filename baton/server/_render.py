"""Human-readable lines for `baton tail` and the table of `baton status`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

from baton.pipeline.records import MemoryRecalled  # noqa: F401 - every layer's records registered
from baton.runtime.token_records import registered_records

if TYPE_CHECKING:
    from baton.pipeline.scenario_state import ScenarioState
    from baton.runtime.context_fill import ContextFill
    from baton.server._status_models import StatusReport

BAR_WIDTH = 20
_COMMON = ("ts", "event", "actor", "scenario", "conversation")


def fill_bar(fill: float, threshold: float | None, width: int = BAR_WIDTH) -> str:
    """`[#######-----|-----]`: the fill, with `|` inserted where compaction triggers."""
    filled = round(min(max(fill, 0.0), 1.0) * width)
    cells = ["#" if index < filled else "-" for index in range(width)]
    if threshold is not None:
        cells.insert(round(min(max(threshold, 0.0), 1.0) * width), "|")
    return "[" + "".join(cells) + "]"


def _n(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def _time(record: Mapping[str, Any]) -> str:
    ts = str(record.get("ts") or "")
    # ISO 8601 "2025-01-02T12:03:04.123456Z" as "2025-01-02 12:03:04": a tail that reaches
    # back into rotated files spans days, so the date stays.
    return f"{ts[:10]} {ts[11:19]}" if len(ts) >= 19 else ts or "---------- --:--:--"


def _context(tokens: Any, window: Any, threshold: Any) -> str:
    if not isinstance(tokens, int) or not isinstance(window, int) or window <= 0:
        return ""
    fill = tokens / window
    mark = threshold / window if isinstance(threshold, int) else None
    return f"{fill_bar(fill, mark)} {fill:4.0%} of {_n(window)}"


def render_record(record: Mapping[str, Any]) -> str:
    """One line for one token-log record: time, actor, then what the event says."""
    event = str(record.get("event", "?"))
    head = f"{_time(record)}  {record.get('actor') or '-':<10}"
    if event == "model.call":
        usage = (
            f"in {_n(record.get('input_tokens'))}  "
            f"cache-write {_n(record.get('cache_creation_input_tokens'))}  "
            f"cache-read {_n(record.get('cache_read_input_tokens'))}  "
            f"out {_n(record.get('output_tokens'))}"
        )
        context = _context(
            record.get("context_tokens"),
            record.get("context_window"),
            record.get("compact_threshold"),
        )
        purpose = record.get("purpose")
        tag = f"  ({purpose})" if purpose not in (None, "turn") else ""
        return f"{head}  {record.get('model', '?'):<18}  {usage}  {context}{tag}".rstrip()
    if event == "context.compacted":
        return (
            f"{head}  == compacted {_n(record.get('tokens_before'))} -> "
            f"{_n(record.get('tokens_after'))} tokens ({record.get('mode', '?')}, "
            f"{_n(record.get('kept_steps'))} steps kept, summary "
            f"{_n(record.get('summary_tokens'))} tokens) =="
        )
    extra = "  ".join(f"{key}={value}" for key, value in record.items() if key not in _COMMON)
    return f"{head}  {event}  {extra}".rstrip()


def _context_cell(context: ContextFill | None) -> str:
    if context is None:
        return "-"
    mark = context.compact_threshold / context.context_window
    return (
        f"{fill_bar(context.fill, mark, width=10)} {context.fill:4.0%} "
        f"{_n(context.context_tokens)}/{_n(context.context_window)}"
    )


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def cost_figure(state: ScenarioState) -> str:
    """`cost: $0.0123` (`of $5.00 cap` when capped): what the run's calls cost so far; `—`
    when a call's price is unknown (docs/models.md, "Prices")."""
    figure = "cost: —" if state.cost_usd is None else f"cost: {_usd(state.cost_usd)}"
    if state.max_cost_usd is not None:
        figure += f" of {_usd(state.max_cost_usd)} cap"
    return figure


def _usd(amount: float) -> str:
    return f"${amount:,.2f}" if amount >= 1 else f"${amount:.4f}"


def _scenario_line(state: ScenarioState) -> str:
    line = f"  {state.scenario}: {state.phase} (iteration {state.iteration})"
    # While it waits (the model unavailable, ...) that is the news; the reason is in --json.
    if state.waiting or state.reason:
        line += f" — {state.waiting or state.reason}"
    return line


def render_scenario(state: ScenarioState) -> str:
    """One line for one scenario's state."""
    return _scenario_line(state).strip()


def render_status(report: StatusReport, workspace: str | None = None) -> str:
    """The `baton status` table: actors, scenarios, pending approvals (each with its
    summary, design files and the commands that decide it), scenarios whose record is
    damaged (its file, what is wrong, what to do), dead letters. `workspace` is the
    `--workspace` the commands must carry (None or `.`: none)."""
    # The compaction audit (the agents' package) and the handoff packages: `baton status`
    # loads them, `baton tail` does not (docs/architecture.md, "What a command imports").
    from baton.agents.last_compaction import compaction_lines  # noqa: PLC0415
    from baton.server._approvals import pending_lines  # noqa: PLC0415

    lines = [f"runtime pid {report.pid} in {report.workspace}"]
    header = ["ACTOR", "TYPE", "STATE", "MAILBOX", "HANDLED", "FAILED", "RESTARTS", "CONTEXT"]
    rows = [header] + [
        [
            actor.name,
            actor.actor_type,
            actor.state,
            f"{actor.mailbox_depth}/{actor.mailbox_capacity}",
            str(actor.handled),
            str(actor.failures),
            str(actor.restarts),
            _context_cell(actor.context),
        ]
        for actor in report.actors
    ]
    lines += _table(rows) if report.actors else ["no actors"]
    # Why an actor is cooling down (and when it restarts) or has stopped for good.
    lines += [f"  {a.name}: {a.stop_reason}" for a in report.actors if a.stop_reason]
    # What a keyed actor (an agent: its conversations) is working on now.
    lines += [
        f"  {a.name}: working on {', '.join(a.working_on)}" for a in report.actors if a.working_on
    ]
    # Each agent's newest compaction, from its audit file (docs/context.md, "Compaction audit").
    if report.workspace is not None:
        lines += compaction_lines(Path(report.workspace))
    if not report.scheduler:
        lines.append("scenarios: none (no scheduler running)")
    elif report.scenarios_error:
        lines.append(f"scenarios: unavailable ({report.scenarios_error})")
    else:
        lines.append(f"scenarios: {len(report.scenarios) or 'none'}")
        for state in report.scenarios:
            lines += [_scenario_line(state), f"    {cost_figure(state)}"]
    for state in report.pending_approvals:
        lines.append(f"awaiting approval: {state.scenario} (iteration {state.iteration})")
        lines += pending_lines(state, workspace)
    # Refused until moved aside: the only place besides the start's warning that says so.
    for damaged in report.damaged_scenarios:
        lines += [
            f"damaged record: {damaged.scenario} (refused until the file is moved aside)",
            f"  {damaged.path} {damaged.problem}",
            f"  what to do: {damaged.fix}",
        ]
    listed = " (`baton dead-letters` lists them)" if report.dead_letters else ""
    lines.append(f"dead letters: {report.dead_letters}{listed}")
    lines.append(f"token log: {report.token_log} ({report.token_records} records this run)")
    return "\n".join(lines)


# Fields the schema leaves undescribed; the schema's own descriptions win when present.
_FIELD_NOTES = {
    "event": "the event name; the rows below list each event's own fields",
    "tokens_before": "context size before compaction",
    "tokens_after": "context size after compaction",
    "summary_tokens": "tokens of the summary that replaced the history",
    "latency_ms": "wall time, in milliseconds",
    "tool_use_id": "the tool call whose result was cut",
    "original_chars": "the result's length before the cut",
    "kept_chars": "characters kept (head and tail)",
    "restarts": "restarts of this actor so far",
    "backoff_ms": "wait before the restart",
    "reason": "why (the error, or why the message was given up on)",
    "message_id": "the message's id",
    "message_type": "the message's class name",
    "attempt": "delivery attempts made",
}


def _type_name(annotation: Any) -> str:
    args = get_args(annotation)
    if get_origin(annotation) is Literal:
        return " \\| ".join(f'`"{arg}"`' for arg in args)
    if get_origin(annotation) is list:
        return f"list of {_type_name(args[0])}"
    if get_origin(annotation) is dict:
        return "object"
    if args:
        return " or ".join(_type_name(arg) for arg in args)
    names = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def token_log_table() -> str:
    """README's table of every token-log field, generated from `token_records`."""
    events = registered_records()
    common = ("ts", "event", "actor", "scenario", "conversation", "process")
    first = events[0].model_fields
    rows = ["| event | field | type | meaning |", "|---|---|---|---|"]
    for name in common:
        description = first[name].description or _FIELD_NOTES[name]
        kind = "string" if name == "event" else _type_name(first[name].annotation)
        rows.append(f"| every line | `{name}` | {kind} | {_cell(description)} |")
    # Events with the same fields (handoff.sent / handoff.received) share their rows.
    groups: list[tuple[list[str], list[tuple[str, str, str]]]] = []
    for model in events:
        fields = [
            (
                info.alias or name,
                _type_name(info.annotation),
                info.description or _FIELD_NOTES.get(info.alias or name, ""),
            )
            for name, info in model.model_fields.items()
            if name not in common
        ]
        event = f"`{model.model_fields['event'].default}`"
        if groups and groups[-1][1] == fields:
            groups[-1][0].append(event)
        else:
            groups.append(([event], fields))
    for names, fields in groups:
        label = ", ".join(names)
        rows += [f"| {label} | `{f}` | {kind} | {_cell(text)} |" for f, kind, text in fields]
    return "\n".join(rows)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")
