"""`baton report` of real offline runs, opened in headless Chromium: what a reader sees."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BATON = str(Path(sys.executable).parent / "baton")
SCENARIO = "leave_application"
CHROMIUM = "chromium"
DEADLINE = 25.0
# No network, no first-run work, no profile shared with anything else (README.md, "Quickstart").
HEADLESS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


class _Dom(HTMLParser):
    """The rendered elements: each tag with its attributes, and the text of each table row."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {key: value or "" for key, value in attrs}))
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.rows:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def with_class(self, name: str) -> list[dict[str, str]]:
        return [attrs for _, attrs in self.elements if attrs.get("class") == name]


def _env() -> dict[str, str]:
    # Offline: no key, so the scripted model answers (README.md, "Quickstart").
    return {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "BATON_"))}


def _chromium() -> str:
    found = shutil.which(CHROMIUM)
    if found is None:
        pytest.fail("chromium is not installed: run scripts/system-packages")
    return found


def _offline_run(tmp_path: Path, runs: int = 1) -> Path:
    """A workspace where leave_application ran to its end offline `runs` times (`NAME`,
    `NAME@2`, ...), with its token log."""
    workspace = tmp_path / "ws"
    folder = workspace / "scenarios" / SCENARIO
    folder.mkdir(parents=True)
    for name in ("scenario.toml", "offline_script.json"):
        shutil.copy(ROOT / "scenarios" / SCENARIO / name, folder)
    for _ in range(runs):
        run = subprocess.run(
            [BATON, "run", "--submit", SCENARIO, "--auto-approve", "--exit-when-idle"],
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            env=_env(),
            check=False,
        )
        assert 0 == run.returncode, run.stderr[-2000:]
    return workspace


def _browse(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium, *HEADLESS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        env=_env(),
        check=False,
    )


def test_the_report_of_an_offline_run_renders_in_chromium(tmp_path: Path) -> None:
    """Chromium shows the latest of two runs: a lane per agent, a marker per compaction with
    its before → after, the handoffs and the approval, and the cost table, all of that run
    only; the runs listed with their outcome; its screenshot is a real picture."""
    chromium = _chromium()
    workspace = _offline_run(tmp_path, runs=2)
    logged = [
        json.loads(line)
        for line in (workspace / ".baton" / "logs" / "tokens.jsonl").read_text().splitlines()
    ]
    records = [r for r in logged if r.get("conversation") == f"{SCENARIO}@2"]
    compactions = sorted(
        (r["tokens_before"], r["tokens_after"])
        for r in records
        if r["event"] == "context.compacted"
    )
    report = subprocess.run(
        [BATON, "report", "--scenario", SCENARIO, "--workspace", str(workspace)],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        env=_env(),
        check=False,
    )
    assert 0 == report.returncode, report.stderr
    page = Path(report.stdout.strip())
    assert workspace / ".baton" / "reports" / f"{SCENARIO}.html" == page

    dumped = _browse(chromium, tmp_path / "profile", "--dump-dom", page.as_uri())
    assert 0 == dumped.returncode, dumped.stderr[-2000:]
    dom = _Dom()
    dom.feed(dumped.stdout)
    lanes = [attrs["data-actor"] for attrs in dom.with_class("lane")]
    assert ["init", "execute", "scheduler"] == lanes
    marks = sorted(
        (int(attrs["data-before"]), int(attrs["data-after"]))
        for attrs in dom.with_class("compaction")
    )
    assert compactions == marks
    assert len(marks) >= 2  # the offline run compacts in both agents
    for before, after in marks:
        assert f"{before:,} → {after:,}" in dumped.stdout
    approvals = [(a["data-from"], a["data-to"]) for a in dom.with_class("approval")]
    assert [("scheduler", "execute")] * 2 == approvals
    assert len(dom.with_class("handoff")) >= 4
    header, *body = next(rows for rows in _tables(dom) if rows[0][0] == "agent")
    assert ["agent", "model", "calls", "input", "cache write", "cache read", "output"] == (
        header[:7]
    )
    calls = {r["actor"]: 0 for r in records if r["event"] == "model.call"}
    for r in records:
        if r["event"] == "model.call":
            calls[r["actor"]] += 1
    expected = [[actor, "offline-scripted", f"{count:,}"] for actor, count in calls.items()]
    assert sorted(expected) == sorted(row[:3] for row in body[:-1])
    assert ["total", "", f"{sum(calls.values()):,}"] == body[-1][:3]
    assert {"$0.0000"} == {row[7] for row in body}
    [runs] = [rows for rows in _tables(dom) if rows[0][0] == "run"]
    assert [f"{SCENARIO}@1", f"{SCENARIO}@2"] == [row[0] for row in runs[1:]]
    assert {"completed"} == {row[2].split(":")[0] for row in runs[1:]}
    assert "shown here" == runs[2][4]
    assert f"baton report --scenario {SCENARIO}@1" in runs[1][4]

    shot = tmp_path / "report.png"
    taken = _browse(
        chromium,
        tmp_path / "profile",
        f"--screenshot={shot}",
        "--window-size=1400,1000",
        page.as_uri(),
    )
    assert 0 == taken.returncode, taken.stderr[-2000:]
    assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert shot.stat().st_size > 10_000


def _tables(dom: _Dom) -> list[list[list[str]]]:
    """The table rows grouped by table: a row of header cells starts a new table."""
    tables: list[list[list[str]]] = []
    for row in dom.rows:
        if row and row[0] in ("agent", "time (UTC)", "run", "iteration"):
            tables.append([])
        if tables:
            tables[-1].append(row)
    return tables


# Measures, in the page as Chromium lays it out, what a reader sees: the run list's and the
# iterations' rows on screen, and each compaction label's box.
_MEASURE = """<script>
const seen = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
const rows = (id) => [...document.querySelectorAll(`#${id} tbody tr`)]
  .filter(seen).map((tr) => [...tr.cells].map((td) => td.innerText));
const labels = [...document.querySelectorAll("g.lane")].map((lane) =>
  [...lane.querySelectorAll("g.compaction text")].map((t) => {
    const b = t.getBBox(); return [b.x, b.y, b.x + b.width, b.y + b.height];
  }));
document.body.dataset.measured = JSON.stringify({runs: rows("runs"),
  iterations: rows("iterations"), labels});
</script>"""


def test_the_run_list_and_each_iterations_outcome_are_visible_and_labels_apart(
    tmp_path: Path,
) -> None:
    """In Chromium's layout the run list and the run's iterations (success rate as passed /
    total, verdict) are on screen as the token log says, and no two compaction labels of a
    lane overlap as drawn."""
    chromium = _chromium()
    workspace = _offline_run(tmp_path, runs=2)
    logged = [
        json.loads(line)
        for line in (workspace / ".baton" / "logs" / "tokens.jsonl").read_text().splitlines()
    ]
    report = subprocess.run(
        [BATON, "report", "--scenario", f"{SCENARIO}@1", "--workspace", str(workspace)],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        env=_env(),
        check=False,
    )
    assert 0 == report.returncode, report.stderr
    page = Path(report.stdout.strip())
    measured = tmp_path / "measured.html"
    measured.write_text(
        page.read_text(encoding="utf-8").replace("</body>", f"{_MEASURE}</body>"),
        encoding="utf-8",
    )
    dumped = _browse(chromium, tmp_path / "profile", "--dump-dom", measured.as_uri())
    assert 0 == dumped.returncode, dumped.stderr[-2000:]
    found = re.search(r'data-measured="([^"]*)"', dumped.stdout)
    assert found is not None, dumped.stdout[-2000:]
    seen = json.loads(unescape(found.group(1)))
    assert [f"{SCENARIO}@1", f"{SCENARIO}@2"] == [row[0] for row in seen["runs"]]
    assert "shown here" == seen["runs"][0][4]
    ended = [r for r in logged if r["event"] == "iteration.ended"]
    expected = [
        [
            str(r["iteration"]),
            r["handoff_type"],
            f"{r['success_rate']:.0%} ({r['passed_samples']}/{r['total_samples']})",
            r["verdict"],
        ]
        for r in ended
        if r["conversation"] == SCENARIO
    ]
    assert len(expected) >= 2  # the offline run goes back to Init once, then completes
    assert expected == [[row[0], row[2], row[3], row[4]] for row in seen["iterations"]]
    for lane in seen["labels"]:
        for index, (left, top, right, bottom) in enumerate(lane):
            for other in lane[index + 1 :]:
                apart = right <= other[0] or other[2] <= left
                assert apart or bottom <= other[1] or other[3] <= top, (lane, index)
