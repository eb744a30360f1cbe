"""`baton report` by run: one run per page with its outcome and iterations, the others
listed; labels that never overlap; times to the second; no empty tables."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from baton.pipeline.errors import CommandLineError
from baton.pipeline.records import IterationEnded, ScenarioEnded
from baton.server._report_data import build_report, load_report, load_reports
from baton.server._report_html import LEFT, PLOT, render
from baton.server._report_labels import CHAR_WIDTH, layout
from baton.server.cli import main
from tests.server.test_report import SCENARIO, call, compacted, handoff, write_log

LOG = Path(".baton") / "logs" / "tokens.jsonl"


def shown(page: str) -> str:
    """The page's text as read: tags dropped, entities decoded."""
    return unescape(re.sub(r"<[^>]+>", "", page))


def ended(ts: str, run: str, outcome: str, reason: str = "") -> dict[str, Any]:
    """A valid `scenario.ended` record of `run`."""
    return ScenarioEnded(
        ts=ts,
        actor="scheduler",
        scenario=run.partition("@")[0],
        conversation=run,
        outcome=outcome,  # type: ignore[arg-type]  # the test passes valid ones
        reason=reason,
        iterations=1,
    ).model_dump(mode="json")


def iteration(ts: str, run: str, number: int, passed: int, total: int) -> dict[str, Any]:
    """A valid `iteration.ended` record of `run`."""
    return IterationEnded(
        ts=ts,
        actor="scheduler",
        scenario=run.partition("@")[0],
        conversation=run,
        iteration=number,
        handoff_type="execute_to_init",
        verdict="return_to_init",
        reason="critical Layer-1 problems affect 40% of samples (> 30%)",
        success_rate=round(passed / total, 4),
        passed_samples=passed,
        total_samples=total,
    ).model_dump(mode="json")


SECOND = f"{SCENARIO}@2"
THIRD = f"{SCENARIO}@3"
RUNS: list[dict[str, Any]] = [
    call("2026-11-23T10:00:00.100000Z", "init", tokens=(1, 1, 1, 1)),
    call("2026-11-23T10:00:01.200000Z", "execute", tokens=(1, 1, 1, 1)),
    handoff(
        "2026-11-23T10:00:02Z", "execute", "scheduler", "execute_to_init", 9, scenario=SCENARIO
    ),
    iteration("2026-11-23T10:00:03Z", SCENARIO, 1, 8, 10),
    ended("2026-11-23T10:00:04Z", SCENARIO, "completed", "success rate 90% ≥ 85%"),
    call("2026-11-23T11:00:00Z", "init", run=SECOND, tokens=(2, 2, 2, 2)),
    ended("2026-11-23T11:00:01Z", SECOND, "failed", "init refused work order leave@2#1"),
    call("2026-11-23T12:00:00Z", "init", run=THIRD, tokens=(3, 3, 3, 3)),
    call("2026-11-23T12:00:01Z", "init", run=THIRD, tokens=(3, 3, 3, 3)),
    ended("2026-11-23T12:00:02Z", THIRD, "stopped", "budget: spent $2.10 of $2.00"),
]


def test_a_scenario_page_draws_its_latest_run_only_and_lists_the_others(tmp_path: Path) -> None:
    """`--scenario NAME` draws the latest run's calls alone, says how it ended, and lists
    every run with its outcome and the command and link that show it."""
    write_log(tmp_path, RUNS)
    report = load_report(tmp_path / LOG, SCENARIO)
    assert report.run is not None
    assert THIRD == report.run.conversation
    assert [("init", 2)] == [(lane.actor, len(lane.points)) for lane in report.lanes]
    assert [("init", 2)] == [(row.actor, row.tally.calls) for row in report.rows]
    runs = [(run.name, run.outcome, run.reason) for run in report.runs]
    assert [
        (f"{SCENARIO}@1", "completed", "success rate 90% ≥ 85%"),
        (SECOND, "failed", "init refused work order leave@2#1"),
        (THIRD, "stopped", "budget: spent $2.10 of $2.00"),
    ] == runs
    page = render(report, links=True)
    text = shown(page)
    assert "Run 3 (the latest) of leave: stopped: budget: spent $2.10 of $2.00" in text
    assert f"baton report --scenario {SCENARIO}@1" in text
    assert '<a href="leave%401.html">open</a>' in page
    assert "failed: init refused work order leave@2#1" in text
    assert 1 == text.count("shown here")


def test_one_run_is_named_by_its_number_the_first_too(tmp_path: Path) -> None:
    """`NAME@1` is the first run (conversation `NAME`) alone, `NAME@2` the second; a run the
    log does not hold is refused naming the known ones."""
    write_log(tmp_path, RUNS)
    first = load_report(tmp_path / LOG, f"{SCENARIO}@1")
    assert first.run is not None
    assert (SCENARIO, 2) == (first.run.conversation, len(first.times) - 1)
    assert ["init", "execute"] == [lane.actor for lane in first.lanes if lane.points]
    second = load_report(tmp_path / LOG, SECOND)
    assert [1] == [len(lane.points) for lane in second.lanes]
    with pytest.raises(CommandLineError, match="unknown run 'leave@4' — known: leave, leave@2"):
        load_report(tmp_path / LOG, f"{SCENARIO}@4")


def test_a_stopped_run_that_goes_on_is_running_and_one_without_an_end_is_not_ended(
    tmp_path: Path,
) -> None:
    """A run stopped at its cap then resumed (records after its end) is running again; a run
    with no `scenario.ended` says it has not ended."""
    resumed = [*RUNS, call("2026-11-23T13:00:00Z", "execute", run=THIRD, tokens=(1, 1, 1, 1))]
    write_log(tmp_path, resumed)
    report = load_report(tmp_path / LOG, SCENARIO)
    assert report.run is not None
    assert ("running", "") == (report.run.outcome, report.run.reason)
    assert "not ended: still running, or interrupted" in render(report)


def test_each_iteration_shows_its_verdict_and_success_rate(tmp_path: Path) -> None:
    """The run's iterations are listed with passed / total samples, verdict and reason."""
    write_log(tmp_path, RUNS)
    page = unescape(render(load_report(tmp_path / LOG, f"{SCENARIO}@1")))
    [row] = re.findall(r'<tr data-iteration="1">(.*?)</tr>', page)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    assert [
        "1",
        "2026-11-23 10:00:03",
        "execute_to_init",
        "80% (8/10)",
        "return_to_init",
        "critical Layer-1 problems affect 40% of samples (> 30%)",
    ] == cells


def test_a_section_without_rows_says_so_in_one_line(tmp_path: Path) -> None:
    """No handoffs, no iterations: one line each instead of a table of headers only."""
    write_log(tmp_path, RUNS)
    page = render(load_report(tmp_path / LOG, SECOND))
    assert '<p class="none">No handoffs in this run.</p>' in page
    assert '<p class="none">No iteration reports in this run.</p>' in page
    assert [] == re.findall(r'<table id="(?:events|iterations)"', page)


def test_times_are_shown_to_the_second() -> None:
    """No time on the page carries a fraction of a second: axis, tooltips, tables, span."""
    records = [
        call(f"2026-11-23T10:00:0{n}.{n}23456Z", "init", tokens=(1, 1, 1, 1)) for n in range(4)
    ]
    records.append(compacted("2026-11-23T10:00:04.999999Z", "init", 9_000, 1_000))
    records.append(
        handoff(
            "2026-11-23T10:00:05.654321Z", "init", "scheduler", "init_to_execute", 1, scenario="x"
        )
    )
    page = render(build_report(records, "all"))
    assert [] == re.findall(r"\d\d:\d\d:\d\d\.\d", page)
    assert "2026-11-23 10:00:05" in page


def boxes(page: str) -> list[tuple[float, float, float, float]]:
    """Each compaction label's box (left, top, right, bottom) from the page's own SVG."""
    found = []
    for x, y, anchor, text in re.findall(
        r'<g class="compaction"[^>]*>.*?<text x="([\d.]+)" y="([\d.]+)"'
        r'(?: text-anchor="(\w+)")?[^>]*>([^<]*)</text>',
        page,
    ):
        size = len(unescape(text)) * CHAR_WIDTH
        left = float(x) - size if anchor == "end" else float(x)
        # The 11px font's line box as Chromium lays it out: 11 above the baseline, 2.5 below.
        found.append((left, float(y) - 11, left + size, float(y) + 2.5))
    return found


def test_close_compaction_labels_never_overlap() -> None:
    """Compactions a few pixels apart get labels on different rows or share one, and no two
    label boxes on the page intersect."""
    records = [call("2026-11-23T10:00:00Z", "init", context=30_000)]
    for n in range(1, 9):
        records.append(compacted(f"2026-11-23T10:00:0{n}Z", "init", 30_000 + n, 9_000))
    records.extend(call(f"2026-11-23T10:01:{n:02d}Z", "init", context=9_000) for n in range(60))
    page = render(build_report(records, "all"))
    drawn = boxes(page)
    assert len(drawn) >= 3  # on three rows
    for index, (left, top, right, bottom) in enumerate(drawn):
        for other in drawn[index + 1 :]:
            assert not (
                left < other[2] and other[0] < right and top < other[3] and other[1] < bottom
            )
    texts = re.findall(r"\(\+(\d+) more\)", page)
    assert 8 == len(drawn) + sum(int(count) for count in texts)


def test_the_label_layout_keeps_rows_apart_and_counts_every_mark() -> None:
    """At the data level: labels of one row never overlap, one near the right edge turns left,
    and marks the rows cannot hold are counted in a neighbour's label."""
    high = LEFT + PLOT
    marks = [(LEFT + 2.0 * n, f"{30_000 + n:,} → 9,000") for n in range(10)]
    marks.append((high - 1, "99,999 → 1,000"))
    labels = layout(marks, LEFT, high)
    placed = [label for label in labels if label is not None]
    for label in placed:
        assert (True, True) == (LEFT <= label.left, label.right <= high)
        for other in placed:
            if other is not label and other.row == label.row:
                assert label.right <= other.left or other.right <= label.left
    assert "end" == placed[-1].anchor
    merged = sum(int(n) for label in placed for n in re.findall(r"\+(\d+) more", label.text))
    assert len(marks) == len(placed) + merged


def test_the_command_writes_a_page_per_run_beside_the_scenarios(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--scenario NAME` writes NAME.html (the latest run) and NAME@N.html for each run,
    which its run list links to; with `--out` only that page, listing the commands."""
    write_log(tmp_path, RUNS)
    assert 0 == main(["report", "--workspace", str(tmp_path), "--scenario", SCENARIO])
    reports = tmp_path / ".baton" / "reports"
    assert f"{reports / 'leave.html'}\n" == capsys.readouterr().out
    assert ["leave.html", "leave@1.html", "leave@2.html", "leave@3.html"] == sorted(
        path.name for path in reports.iterdir()
    )
    second = (reports / "leave@2.html").read_text(encoding="utf-8")
    assert "Run 2 of leave: failed" in shown(second)
    out = tmp_path / "one.html"
    assert 0 == main(
        ["report", "--workspace", str(tmp_path), "--scenario", SECOND, "--out", str(out)]
    )
    assert "<a href=" not in out.read_text(encoding="utf-8")
    assert "baton report --scenario leave@1" in out.read_text(encoding="utf-8")


def test_every_run_is_listed_on_the_whole_logs_page(tmp_path: Path) -> None:
    """The whole log's page lists each scenario run with its outcome."""
    write_log(tmp_path, RUNS)
    [report] = load_reports(tmp_path / LOG, None)
    assert [SCENARIO, SECOND, THIRD] == [run.conversation for run in report.runs]
    assert 'id="runs"' in render(report)
