"""The parts of `baton report`'s page about runs: the run shown and its outcome, the list of
the scenario's runs with how to see each, and the run's iterations (README.md, "Token
report"). Times are shown to the second; a section without rows says so in one line.
"""

from __future__ import annotations

from html import escape
from urllib.parse import quote

from baton.server._report_data import Report
from baton.server._report_runs import RunSummary, describe, samples


def when(ts: str) -> str:
    """A record's time to the second (`2026-11-23 10:00:04`), its fraction dropped."""
    return escape(ts[:19].replace("T", " "))


def none(what: str) -> str:
    """The line that stands for a section without rows."""
    return f'<p class="none">{escape(what)}</p>'


def page_name(run: RunSummary) -> str:
    """The file `baton report --scenario NAME` writes this run's page to, beside its own."""
    return f"{run.name}.html"


def heading(run: RunSummary, latest: bool) -> str:
    """The run shown, its outcome and its time span."""
    which = " (the latest)" if latest else ""
    return (
        f'<p class="run">Run {run.number}{which} of {escape(run.scenario)}: '
        f'<span class="outcome {run.outcome}">{escape(describe(run))}</span> · '
        f"started {when(run.started)}, last record {when(run.last)} UTC</p>"
    )


def run_list(runs: list[RunSummary], shown: RunSummary | None, *, links: bool) -> str:
    """Every run listed: started, outcome, iterations, and the command (and, when the pages
    are written beside this one, the link) that shows it."""
    if not runs:
        return none("No scenario runs in the log.")
    rows = []
    for run in runs:
        command = f"baton report --scenario {run.name}"
        if shown is not None and run.conversation == shown.conversation:
            see = "shown here"
        elif links:
            href = escape(quote(page_name(run)))
            see = f'<a href="{href}">open</a> · <code>{escape(command)}</code>'
        else:
            see = f"<code>{escape(command)}</code>"
        rows.append(
            f'<tr data-run="{escape(run.name)}"><td>{escape(run.name)}</td>'
            f"<td>{when(run.started)}</td>"
            f'<td class="outcome {run.outcome}">{escape(describe(run))}</td>'
            f"<td>{len(run.iterations):,}</td><td>{see}</td></tr>"
        )
    head = "".join(
        f"<th>{name}</th>" for name in ("run", "started (UTC)", "outcome", "iterations", "see")
    )
    return f'<table id="runs"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def iterations(run: RunSummary) -> str:
    """The run's iterations: how Execute returned, the success rate, the verdict and why."""
    if not run.iterations:
        return none("No iteration reports in this run.")
    rows = "".join(
        f'<tr data-iteration="{step.iteration}"><td>{step.iteration}</td>'
        f"<td>{when(step.ts)}</td><td>{escape(step.handoff_type)}</td>"
        f"<td>{escape(samples(step))}</td>"
        f'<td class="verdict {escape(step.verdict)}">{escape(step.verdict)}</td>'
        f"<td>{escape(step.reason)}</td></tr>"
        for step in run.iterations
    )
    head = "".join(
        f"<th>{name}</th>"
        for name in (
            "iteration",
            "time (UTC)",
            "returned as",
            "success rate (passed/total)",
            "verdict",
            "why",
        )
    )
    return f'<table id="iterations"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def where(report: Report) -> str:
    """What the page covers, for its "none" lines: one run, or the whole log."""
    return "this run" if report.run is not None else "the log"


def runs_section(report: Report, *, links: bool) -> str:
    """The run drawn, the scenario's runs and the run's iterations; for the whole log, every
    scenario run in it."""
    if report.run is None:
        return f"<h2>Scenario runs in the log</h2>{run_list(report.runs, None, links=False)}"
    latest = bool(report.runs) and report.run.conversation == report.runs[-1].conversation
    return (
        f"{heading(report.run, latest)}"
        f"<h2>Runs of {escape(report.run.scenario)}</h2>"
        f"{run_list(report.runs, report.run, links=links)}"
        f"<h2>Iterations of run {report.run.number}</h2>{iterations(report.run)}"
    )
