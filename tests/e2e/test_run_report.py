"""`baton run` writes each scenario's report as it ends (stopped at its spend cap, then
completed once the cap is raised and it is submitted again), says where, and the report
says how the run ended."""

from __future__ import annotations

import re
import subprocess
from html import unescape
from pathlib import Path

from baton.testing import read_token_log
from tests.e2e.test_process import BATON, env
from tests.pipeline.test_cost_cap import scripted, set_cap

REPORT = Path(".baton") / "reports" / "mini.html"


def run(workspace: Path, *, code: int = 0) -> list[str]:
    """`baton run --submit mini --exit-when-idle`'s output; it exits `code` (1: the scenario
    did not complete)."""
    result = subprocess.run(
        [BATON, "run", "--submit", "mini", "--exit-when-idle", "--workspace", str(workspace)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env(),
        check=False,
    )
    assert code == result.returncode, result.stderr[-2000:]
    return result.stdout.splitlines()


def progress(lines: list[str]) -> list[str]:
    return [line.split(" ", 1)[1] for line in lines if re.match(r"\d\d:\d\d:\d\d ", line)]


def test_a_capped_run_stops_with_a_report_and_resumes_to_completion(tmp_path: Path) -> None:
    """Each end (stopped at the cap, then completed) writes the report and prints its path."""
    scripted(tmp_path, cap=2.0)
    report = tmp_path / REPORT
    first = run(tmp_path, code=1)  # stopped at its cap: not completed
    assert f"mini: stopped · report {report}" in progress(first)
    assert f"    report: {report}" in first
    assert "budget: spent $" in "\n".join(first)
    stopped_at = len([r for r in read_token_log(tmp_path) if r["event"] == "model.call"])
    assert report.is_file()
    assert 'id="costs"' in report.read_text(encoding="utf-8")
    assert "Run 1 (the latest) of mini: stopped: budget: spent $" in shown(report)
    set_cap(tmp_path, 1000.0)
    second = run(tmp_path)
    assert f"mini: completed · report {report}" in progress(second)
    assert f"    report: {report}" in second
    calls = [r for r in read_token_log(tmp_path) if r["event"] == "model.call"]
    assert stopped_at < len(calls)
    assert {"mini"} == {r["conversation"] for r in calls}  # one run, resumed, not a new one
    ends = [r for r in read_token_log(tmp_path) if r["event"] == "scenario.ended"]
    assert [("mini", "stopped"), ("mini", "completed")] == [
        (r["conversation"], r["outcome"]) for r in ends
    ]
    assert "Run 1 (the latest) of mini: completed: success rate" in shown(report)


def shown(page: Path) -> str:
    """The page's text as read: tags dropped, entities decoded."""
    return unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))
