"""`baton report`'s page: one self-contained HTML file, inline CSS and hand-made SVG.

Nothing is fetched when the page opens (no script, no font, no stylesheet from elsewhere),
so it can be mailed or archived as it is. A lane holds at most two points per pixel column
(the column's lowest and highest context), so a log of any length draws in the same room
and its peaks stay visible (README.md, "Token report"). A scenario's page draws one run and
lists the others (`_report_run_html`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from html import escape

from baton.server._report_data import Compaction, Event, Lane, Report, UsageRow
from baton.server._report_labels import ROW_HEIGHT, Label, layout
from baton.server._report_run_html import none, runs_section, when, where

WIDTH = 1200
LEFT = 150  # room for each lane's name and figures
RIGHT = 16
PLOT = WIDTH - LEFT - RIGHT
LANE_HEIGHT = 110
GAP = 44  # between lanes: where the handoff arrows run
TOP = 28
LISTED_EVENTS = 200
MARKER_COLUMN = 6  # pixels: more compactions than columns keep the highest of each column

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2330;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}
.meta{color:#5a6270;margin:0 0 12px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{padding:3px 10px;border-bottom:1px solid #e3e6ea;text-align:right}
th:first-child,td:first-child,th:nth-child(2),td:nth-child(2){text-align:left}
tr.total td{font-weight:600;border-top:2px solid #1d2330}
svg{display:block;max-width:100%;height:auto;border:1px solid #e3e6ea}
svg text{font:11px system-ui,sans-serif;fill:#1d2330}
svg .name{font-size:13px;font-weight:600}
.ctx{fill:none;stroke:#2563eb;stroke-width:1.3}
.threshold{fill:none;stroke:#d97706;stroke-dasharray:5 3}
.window{fill:none;stroke:#dc2626;stroke-dasharray:2 3}
.compaction line{stroke:#7c3aed;stroke-width:2}.compaction circle{fill:#7c3aed}
.compaction text{fill:#7c3aed;paint-order:stroke;stroke:#f8fafc;stroke-width:3px}
.none{color:#5a6270;font-style:italic}.run{font-size:15px;margin:0 0 8px}
.outcome.completed{color:#15803d}.outcome.failed{color:#b91c1c}.outcome.stopped{color:#b45309}
#runs th,#runs td,#iterations th,#iterations td{text-align:left}
.handoff line{stroke:#0f766e;stroke-width:1.5}.approval line{stroke:#16a34a;stroke-width:2.5}
#events th,#events td{text-align:left}#events td:last-child{text-align:right}
.legend span{margin-right:16px;white-space:nowrap}
.swatch{display:inline-block;width:18px;height:3px;vertical-align:middle;margin-right:4px}
"""


def tokens(count: int) -> str:
    """A token count with thousands separators."""
    return f"{count:,}"


def usd(cost: float | None) -> str:
    """An estimated cost in USD; "—" when a price it needs is unknown."""
    if cost is None:
        return "—"
    return f"${cost:,.2f}" if cost >= 1 else f"${cost:.4f}"


def downsample(points: Iterable[tuple[float, int]]) -> list[tuple[float, int]]:
    """`points` (pixel x, value) in x order, at most two per pixel column: the column's
    lowest and highest value, in the order they came, so a peak is never averaged away."""
    kept: list[tuple[float, int]] = []
    column: list[tuple[float, int]] = []

    def flush() -> None:
        if len(column) <= 2:
            kept.extend(column)
            return
        low = min(column, key=lambda point: point[1])
        high = max(column, key=lambda point: point[1])
        kept.extend(sorted({low, high}, key=column.index))

    for point in points:
        if column and int(point[0]) != int(column[0][0]):
            flush()
            column = []
        column.append(point)
    flush()
    return kept


def _tick(ts: str, times: Sequence[str]) -> str:
    """An axis label to the second: with the date too when the log spans days."""
    if times[0][:10] != times[-1][:10]:
        return ts[5:19].replace("T", " ")
    return ts[11:19]


def _path(points: Sequence[tuple[float, float]]) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in points)


class _Axis:
    """Pixel positions on the x axis every lane shares: a record's rank in time."""

    def __init__(self, length: int) -> None:
        self._span = max(length - 1, 1)

    def x(self, index: int) -> float:
        return LEFT + index / self._span * PLOT


def _scale(lane: Lane) -> tuple[int, int]:
    """The lane's y range top in tokens, and its largest window."""
    window = max((point.window for point in lane.points), default=0)
    threshold = max((point.threshold for point in lane.points), default=0)
    wanted = max(lane.peak, threshold) * 5 // 4
    # Up to the window when it is near; a far larger window (1M against a 20K conversation)
    # would flatten the line, so it is named in the label instead of drawn.
    top = window if 0 < window <= wanted * 4 else wanted
    return max(top, lane.peak, 1), window


def _steps(points: Sequence[tuple[float, int]]) -> list[tuple[float, int]]:
    """A step line through the values that change (threshold, window)."""
    steps: list[tuple[float, int]] = []
    for x, value in points:
        if steps and steps[-1][1] != value:
            steps.append((x, steps[-1][1]))
        if not steps or steps[-1][1] != value:
            steps.append((x, value))
    if points and steps:
        steps.append((points[-1][0], steps[-1][1]))
    return steps


def _label_text(mark: Compaction) -> str:
    return f"{tokens(mark.before)} → {tokens(mark.after)}"


def _compaction(
    mark: Compaction, x: float, y: Callable[[int], float], label: Label | None, top: float
) -> str:
    text = _label_text(mark)
    # In the lane's label rows (`_report_labels`): close compactions never overprint.
    shown = (
        f'<text x="{label.x:.1f}" y="{top + 11 + ROW_HEIGHT * label.row:.1f}" '
        f'text-anchor="{label.anchor}" data-row="{label.row}">{escape(label.text)}</text>'
        if label is not None
        else ""
    )
    return (
        f'<g class="compaction" data-before="{mark.before}" data-after="{mark.after}">'
        f"<title>{when(mark.ts)} compacted {text} tokens ({escape(mark.mode)})</title>"
        f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y(mark.before):.1f}" y2="{y(mark.after):.1f}"/>'
        f'<circle cx="{x:.1f}" cy="{y(mark.after):.1f}" r="2.5"/>{shown}</g>'
    )


def _column(x: float) -> int:
    """The marker column of pixel `x`; the right edge belongs to the last column."""
    return min(int(x - LEFT) // MARKER_COLUMN, PLOT // MARKER_COLUMN - 1)


def thin(marks: Sequence[Compaction], x: Callable[[int], float]) -> list[Compaction]:
    """`marks` as drawn: all of them when they fit one per `MARKER_COLUMN` pixels, else the
    one with the highest `before` in each such column."""
    if len(marks) <= PLOT // MARKER_COLUMN:
        return list(marks)
    columns: dict[int, Compaction] = {}
    for mark in marks:
        column = _column(x(mark.x))
        held = columns.get(column)
        if held is None or mark.before > held.before:
            columns[column] = mark
    return list(columns.values())


def thin_events(events: Sequence[Event], x: Callable[[int], float]) -> list[tuple[Event, int]]:
    """Each event as drawn, with how many it stands for: all of them, one each, when they fit
    one per `MARKER_COLUMN` pixels; else the first of each kind and pair of lanes per column."""
    if len(events) <= PLOT // MARKER_COLUMN:
        return [(event, 1) for event in events]
    columns: dict[tuple[int, str, str, str], list[Event]] = {}
    for event in events:
        key = (_column(x(event.x)), event.kind, event.source, event.target)
        columns.setdefault(key, []).append(event)
    return [(group[0], len(group)) for group in columns.values()]


def _lane_svg(lane: Lane, top: float, axis: _Axis) -> str:
    scale, window = _scale(lane)
    inner = LANE_HEIGHT - 12

    def y(value: int) -> float:
        return top + LANE_HEIGHT - min(value, scale) / scale * inner

    parts = [
        f'<g class="lane" data-actor="{escape(lane.actor)}">',
        f'<rect x="{LEFT}" y="{top}" width="{PLOT}" height="{LANE_HEIGHT}" fill="#f8fafc"/>',
        f'<text class="name" x="8" y="{top + 16}">{escape(lane.actor)}</text>',
        f'<text x="8" y="{top + 32}">{len(lane.points):,} calls</text>',
        f'<text x="8" y="{top + 46}">peak {tokens(lane.peak)}</text>',
        f'<text x="8" y="{top + 60}">{len(lane.compactions):,} compactions</text>',
    ]
    if window:
        where = "" if window <= scale else " (off scale)"
        parts.append(f'<text x="8" y="{top + 74}">window {tokens(window)}{where}</text>')
    parts.append(f'<text x="{LEFT - 4}" y="{top + 12}" text-anchor="end">{tokens(scale)}</text>')
    points = [(axis.x(point.x), point.context) for point in lane.points]
    line = [(x, y(value)) for x, value in downsample(points)]
    for name, values in (
        ("threshold", [(axis.x(point.x), point.threshold) for point in lane.points]),
        ("window", [(axis.x(point.x), point.window) for point in lane.points]),
    ):
        steps = [(x, value) for x, value in _steps(values) if value <= scale]
        if steps:
            drawn = [(x, y(value)) for x, value in steps]
            parts.append(f'<polyline class="{name}" points="{_path(drawn)}"/>')
    if line:
        parts.append(f'<polyline class="ctx" points="{_path(line)}"/>')
    marks = thin(lane.compactions, axis.x)
    labels = layout([(axis.x(mark.x), _label_text(mark)) for mark in marks], LEFT, LEFT + PLOT)
    parts.extend(
        _compaction(mark, axis.x(mark.x), y, label, top)
        for mark, label in zip(marks, labels, strict=True)
    )
    parts.append("</g>")
    return "".join(parts)


def _event_svg(event: Event, count: int, lanes: Mapping[str, float], axis: _Axis) -> str:
    source, target = lanes.get(event.source), lanes.get(event.target)
    if source is None or target is None or source == target:
        return ""
    down = target > source
    y1 = source + (LANE_HEIGHT if down else 0)
    y2 = target + (0 if down else LANE_HEIGHT)
    x = axis.x(event.x)
    what = "approved, dispatched" if event.kind == "approval" else "handoff"
    if count > 1:
        what = f"{what} (and {count - 1:,} more here)"
    return (
        f'<g class="{event.kind}" data-from="{escape(event.source)}" '
        f'data-to="{escape(event.target)}"><title>{when(event.ts)} {what}: '
        f"{escape(event.handoff_type)} {escape(event.source)} → {escape(event.target)} "
        f"({tokens(event.package_tokens)} tokens)</title>"
        f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y1:.1f}" y2="{y2:.1f}" '
        f'marker-end="url(#arrow-{event.kind})"/></g>'
    )


def _chart(report: Report) -> str:
    axis = _Axis(report.length)
    tops = {
        lane.actor: TOP + index * (LANE_HEIGHT + GAP) for index, lane in enumerate(report.lanes)
    }
    height = TOP + len(report.lanes) * (LANE_HEIGHT + GAP)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" role="img" aria-label="context per lane">',
        "<defs>",
        *(
            f'<marker id="arrow-{kind}" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" '
            f'markerHeight="7" orient="auto"><path d="M0,0L8,4L0,8z" fill="{color}"/></marker>'
            for kind, color in (("handoff", "#0f766e"), ("approval", "#16a34a"))
        ),
        "</defs>",
    ]
    if report.times:
        for index in sorted({round(step * (report.length - 1) / 4) for step in range(5)}):
            x = axis.x(index)
            anchor = "start" if index == 0 else "end" if index == report.length - 1 else "middle"
            stamp = escape(_tick(report.times[index], report.times) or report.times[index])
            parts.append(f'<text x="{x:.1f}" y="16" text-anchor="{anchor}">{stamp}</text>')
    parts.extend(_lane_svg(lane, tops[lane.actor], axis) for lane in report.lanes)
    parts.extend(
        _event_svg(event, count, tops, axis) for event, count in thin_events(report.events, axis.x)
    )
    parts.append("</svg>")
    return "".join(parts)


def _usage_table(report: Report) -> str:
    if not report.rows:
        return none(f"No model calls in {where(report)}.")

    def cells(row: UsageRow) -> str:
        return "".join(
            f"<td>{value}</td>"
            for value in (
                escape(row.actor),
                escape(row.model),
                f"{row.tally.calls:,}",
                tokens(row.tally.input_tokens),
                tokens(row.tally.cache_creation_input_tokens),
                tokens(row.tally.cache_read_input_tokens),
                tokens(row.tally.output_tokens),
                usd(row.cost),
            )
        )

    total = UsageRow("total", "")
    for row in report.rows:
        total.tally.merge(row.tally)
    known, complete = report.total_cost
    cost = usd(known) if complete else f"{usd(known)} + —"
    total_cells = cells(total).rsplit("<td>", 1)[0] + f"<td>{cost}</td>"
    head = "".join(
        f"<th>{name}</th>"
        for name in (
            "agent",
            "model",
            "calls",
            "input",
            "cache write",
            "cache read",
            "output",
            "est. cost (USD)",
        )
    )
    body = "".join(f"<tr>{cells(row)}</tr>" for row in report.rows)
    return (
        f'<table id="costs"><thead><tr>{head}</tr></thead><tbody>{body}'
        f'<tr class="total">{total_cells}</tr></tbody></table>'
    )


def _events_table(report: Report) -> str:
    if not report.events:
        return none(f"No handoffs in {where(report)}.")
    rows = "".join(
        f"<tr><td>{when(event.ts)}</td><td>{event.kind}</td><td>{escape(event.handoff_type)}"
        f"</td><td>{escape(event.source)} → {escape(event.target)}</td>"
        f"<td>{tokens(event.package_tokens)}</td></tr>"
        for event in report.events[:LISTED_EVENTS]
    )
    more = len(report.events) - LISTED_EVENTS
    note = f'<p class="meta">and {more:,} more (all are drawn above)</p>' if more > 0 else ""
    return (
        '<table id="events"><thead><tr><th>time (UTC)</th><th>event</th><th>type</th>'
        f"<th>from → to</th><th>package tokens</th></tr></thead><tbody>{rows}</tbody></table>"
        f"{note}"
    )


def render(report: Report, *, links: bool = False) -> str:
    """The whole page of `report`; `links`: the other runs' pages are written beside it
    (`baton report --scenario` without `--out`), so the run list links to them."""
    span = (
        f"{when(report.times[0])} – {when(report.times[-1])} UTC" if report.times else "no records"
    )
    calls = sum(row.tally.calls for row in report.rows)
    compactions = sum(len(lane.compactions) for lane in report.lanes)
    skipped = (
        f" · {report.skipped_lines:,} lines that are not JSON records skipped"
        if report.skipped_lines
        else ""
    )
    legend = "".join(
        f'<span><i class="swatch" style="background:{color}"></i>{name}</span>'
        for color, name in (
            ("#2563eb", "context tokens after each call"),
            ("#d97706", "compaction threshold"),
            ("#dc2626", "context window"),
            ("#7c3aed", "compaction (before → after)"),
            ("#0f766e", "handoff"),
            ("#16a34a", "approved design dispatched"),
        )
    )
    chart = (
        f'<p class="legend">{legend}</p>{_chart(report)}'
        if report.lanes
        else none(f"No model calls, compactions or handoffs in {where(report)}.")
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>baton report — {escape(report.scope)}</title><style>{_STYLE}</style></head>"
        f"<body><h1>baton report — {escape(report.scope)}</h1>"
        f'<p class="meta">{span} · {calls:,} model calls · {compactions:,} compactions · '
        f"{len(report.events):,} handoffs and approvals{skipped}. The x axis is the order "
        "of the records in time; costs are estimates from list prices (— where a price is "
        "unknown).</p>"
        f"{runs_section(report, links=links)}{chart}"
        f"<h2>Calls, tokens and estimated cost per agent and model</h2>{_usage_table(report)}"
        f"<h2>Handoffs and approvals</h2>{_events_table(report)}</body></html>\n"
    )
