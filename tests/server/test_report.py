"""`baton report`: aggregation of token-log records, the page drawn from it, the command."""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from baton.agents.records import ContextCompacted, HandoffSent, ModelCall
from baton.context.usage import Usage
from baton.errors import UsageError
from baton.models.pricing import ModelPrice, cost_usd
from baton.pipeline.errors import CommandLineError
from baton.server._report_data import build_report, load_report, select
from baton.server._report_html import MARKER_COLUMN, PLOT, _Axis, downsample, render, thin, usd
from baton.server.cli import main
from tests.pipeline.test_offline_model import unblock

SCENARIO = "leave"
USAGE_KEYS = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
)


def call(
    ts: str,
    actor: str,
    *,
    model: str = "claude-opus-5-5",
    tokens: tuple[int, int, int, int] = (0, 0, 0, 0),
    context: int | None = None,
    run: str = SCENARIO,
    threshold: int = 24_000,
    window: int = 64_000,
) -> dict[str, Any]:
    """A valid `model.call` record; `tokens` is (input, cache write, cache read, output)."""
    size = sum(tokens) if context is None else context
    return ModelCall(
        ts=ts,
        actor=actor,
        scenario=run.partition("@")[0],
        conversation=run,
        model=model,
        input_tokens=tokens[0],
        cache_creation_input_tokens=tokens[1],
        cache_read_input_tokens=tokens[2],
        output_tokens=tokens[3],
        context_tokens=size,
        context_window=window,
        compact_threshold=threshold,
        fill=min(size / window, 1),
        latency_ms=1.0,
        stop_reason="tool_use",
        turn=0,
        # As the agent writes it: from the package's prices (docs/models.md, "Prices").
        cost_usd=cost_usd(model, Usage(**dict(zip(USAGE_KEYS, tokens, strict=True)))),
    ).model_dump(mode="json")


def compacted(ts: str, actor: str, before: int, after: int) -> dict[str, Any]:
    """A valid `context.compacted` record."""
    return ContextCompacted(
        ts=ts,
        actor=actor,
        scenario=SCENARIO,
        conversation=SCENARIO,
        tokens_before=before,
        tokens_after=after,
        kept_steps=3,
        summary_tokens=900,
        mode="llm",
        latency_ms=4.0,
    ).model_dump(mode="json")


def handoff(
    ts: str, source: str, target: str, kind: str, tokens: int, *, scenario: str | None
) -> dict[str, Any]:
    """A valid `handoff.sent` record (the Scheduler's own carry no scenario)."""
    return HandoffSent.model_validate(
        {
            "ts": ts,
            "actor": source,
            "scenario": scenario,
            "conversation": scenario,
            "handoff_type": kind,
            "from": source,
            "to": target,
            "package_tokens": tokens,
        }
    ).model_dump(mode="json", by_alias=True)


RECORDS: list[dict[str, Any]] = [
    call("2026-11-23T10:00:00Z", "init", tokens=(1_000, 2_000, 10_000, 500)),
    call("2026-11-23T10:00:01Z", "init", tokens=(3, 4_000, 13_000, 7_000)),
    compacted("2026-11-23T10:00:02Z", "init", 24_003, 9_000),
    handoff("2026-11-23T10:00:03Z", "init", "scheduler", "init_to_execute", 375, scenario=SCENARIO),
    handoff("2026-11-23T10:00:04Z", "scheduler", "execute", "init_to_execute", 375, scenario=None),
    call("2026-11-23T10:00:05Z", "execute", model="claude-haiku-4-5", tokens=(10, 0, 0, 20)),
    call("2026-11-23T10:00:06Z", "execute", model="claude-sonnet-5-5", tokens=(100, 0, 0, 50)),
    call("2026-11-23T10:00:07Z", "execute", model="claude-haiku-4-5", tokens=(1, 2, 3, 4)),
]


def rows_by_key(records: list[dict[str, Any]]) -> Mapping[tuple[str, str], Any]:
    return {(row.actor, row.model): row for row in build_report(records, "all").rows}


def test_token_counts_are_summed_per_agent_and_model() -> None:
    """Each (agent, model) row holds its call count and the sum of each of the four counts."""
    rows = rows_by_key(RECORDS)
    init = rows[("init", "claude-opus-5-5")]
    haiku = rows[("execute", "claude-haiku-4-5")]
    assert (2, 1_003, 6_000, 23_000, 7_500) == (
        init.tally.calls,
        init.tally.input_tokens,
        init.tally.cache_creation_input_tokens,
        init.tally.cache_read_input_tokens,
        init.tally.output_tokens,
    )
    assert (2, 11, 2, 3, 24) == (
        haiku.tally.calls,
        haiku.tally.input_tokens,
        haiku.tally.cache_creation_input_tokens,
        haiku.tally.cache_read_input_tokens,
        haiku.tally.output_tokens,
    )
    expected = [
        ("init", "claude-opus-5-5"),
        ("execute", "claude-haiku-4-5"),
        ("execute", "claude-sonnet-5-5"),
    ]
    assert expected == list(rows)


def test_cost_per_model_comes_from_the_price_table() -> None:
    """Opus 5.5 at $4 in, $5 cache write, $0.20 cache read, $20 out per million; Sonnet 5.5
    at $2 in and $10 out; a model without a known price costs "—" and so does the total."""
    rows = rows_by_key(RECORDS)
    opus = 1_003 * 4 + 6_000 * 5 + 23_000 * 0.20 + 7_500 * 20
    assert opus / 1e6 == pytest.approx(rows[("init", "claude-opus-5-5")].cost)
    assert (100 * 2 + 50 * 10) / 1e6 == pytest.approx(rows[("execute", "claude-sonnet-5-5")].cost)
    assert rows[("execute", "claude-haiku-4-5")].cost is None
    known, complete = build_report(RECORDS, "all").total_cost
    assert (opus + 700) / 1e6 == pytest.approx(known)
    assert complete is False
    assert "—" == usd(None)
    assert "$0.1886" == usd(opus / 1e6)  # $0.188612


def test_the_offline_model_costs_nothing() -> None:
    """Calls on `offline-scripted` are priced at zero, not unknown."""
    rows = rows_by_key([call("2026-11-23T10:00:00Z", "init", model="offline-scripted")])
    assert 0.0 == rows[("init", "offline-scripted")].cost


def test_compactions_are_marked_on_their_lane_between_the_calls() -> None:
    """A compaction lands on its agent's lane, after the call before it, with before → after;
    the page marks it with both figures."""
    report = build_report(RECORDS, "all")
    lanes = {lane.actor: lane for lane in report.lanes}
    [mark] = lanes["init"].compactions
    assert (24_003, 9_000) == (mark.before, mark.after)
    assert [0, 1] == [point.x for point in lanes["init"].points]
    assert 2 == mark.x
    assert [] == lanes["execute"].compactions
    page = render(report)
    assert 1 == page.count('class="compaction"')
    assert 'data-before="24003" data-after="9000"' in page
    assert "24,003 → 9,000" in page


def test_handoffs_become_events_and_the_dispatch_of_a_design_an_approval() -> None:
    """Each `handoff.sent` is an event between two lanes; the Scheduler's Init → Execute
    dispatch is the approval; an actor only named by a handoff still gets a lane."""
    report = build_report(RECORDS, "all")
    kinds = [(event.kind, event.source, event.target) for event in report.events]
    assert [("handoff", "init", "scheduler"), ("approval", "scheduler", "execute")] == kinds
    assert ["init", "execute", "scheduler"] == [lane.actor for lane in report.lanes]
    page = render(report)
    assert 1 == page.count('<g class="approval"')
    assert 1 == page.count('<g class="handoff"')


def test_a_scenario_keeps_its_runs_and_the_schedulers_handoffs_of_its_packages() -> None:
    """`--scenario NAME` keeps all its runs; `NAME@2` one run; the Scheduler's handoff of a
    package the scenario's agent sent is kept, another scenario's is not."""
    records = [
        *RECORDS,
        call("2026-11-23T11:00:00Z", "init", run=f"{SCENARIO}@2", tokens=(1, 1, 1, 1)),
        call("2026-11-23T11:00:01Z", "init", run="other", tokens=(1, 1, 1, 1)),
        handoff(
            "2026-11-23T11:00:02Z", "scheduler", "execute", "init_to_execute", 99, scenario=None
        ),
    ]
    everything = select(records, SCENARIO)
    assert len(RECORDS) + 1 == len(everything)
    second = select(records, f"{SCENARIO}@2")
    assert [f"{SCENARIO}@2"] == [record["conversation"] for record in second]


def test_a_lane_with_more_points_than_pixels_is_downsampled_keeping_its_peaks() -> None:
    """Two points at most per pixel column, and the column's highest and lowest stay."""
    assert [(10.2, 90), (10.3, 1), (11.0, 7)] == downsample(
        [(10.1, 5), (10.2, 90), (10.3, 1), (10.9, 40), (11.0, 7)]
    )
    records = [
        call(
            f"2026-11-23T{10 + n // 3600}:{n // 60 % 60:02d}:{n % 60:02d}Z", "init", context=n % 997
        )
        for n in range(20_000)
    ]
    records.append(call("2026-11-23T23:00:00Z", "execute", context=63_999))
    records[12_345] = call(records[12_345]["ts"], "init", context=50_000)
    page = render(build_report(records, "all"))
    [line] = re.findall(r'<polyline class="ctx" points="([^"]*)"', page)[:1]
    assert len(line.split()) <= 2 * PLOT
    ys = [float(pair.split(",")[1]) for pair in line.split()]
    # The first lane's bottom is at 28 + 110; its 98 pixels span the 64,000-token window.
    assert 28 + 110 - 50_000 / 64_000 * 98 == pytest.approx(min(ys), abs=0.1)


def test_more_compactions_than_columns_keep_the_highest_of_each_column() -> None:
    """Thousands of compactions on a lane draw one marker per few pixels: the one from the
    highest context, so the worst compaction of each stretch stays visible."""
    records = []
    for n in range(3_000):
        ts = f"2026-11-23T{10 + n // 3600}:{n // 60 % 60:02d}:{n % 60:02d}Z"
        records.append(compacted(ts, "init", 30_000 + (n % 7) * 1_000, 9_000))
    records[1_500] = compacted(records[1_500]["ts"], "init", 99_000, 9_000)
    report = build_report(records, "all")
    [lane] = report.lanes
    kept = thin(lane.compactions, _Axis(report.length).x)
    assert len(kept) <= PLOT // MARKER_COLUMN
    assert 99_000 in {mark.before for mark in kept}
    assert 36_000 == min(mark.before for mark in kept)  # every column holds a 36,000 one
    assert len(kept) == render(report).count('class="compaction"')


def test_the_page_is_self_contained() -> None:
    """No script, stylesheet, font or image is loaded from anywhere."""
    page = render(build_report(RECORDS, "all"))
    assert [] == re.findall(r"<(?:script|link|img|iframe)\b", page)
    assert ["http://www.w3.org/2000/svg"] == re.findall(r"https?://[^\"' )]+", page)
    assert set() == {ref for ref in re.findall(r"url\(([^)]*)\)", page) if ref[:1] != "#"}
    assert "@import" not in page


def write_log(workspace: Path, *files: list[dict[str, Any]]) -> None:
    """`files` as the token log: the last is tokens.jsonl, the ones before it rotated."""
    logs = workspace / ".baton" / "logs"
    logs.mkdir(parents=True)
    for age, records in enumerate(reversed(files)):
        name = "tokens.jsonl" if age == 0 else f"tokens.jsonl.{age}"
        lines = "".join(json.dumps(record) + "\n" for record in records)
        (logs / name).write_text(lines, encoding="utf-8")


def test_the_rotated_files_are_read_oldest_first(tmp_path: Path) -> None:
    """Records of tokens.jsonl.2 and .1 come before those of tokens.jsonl; a torn line is
    counted and skipped."""
    write_log(tmp_path, RECORDS[:2], RECORDS[2:5], RECORDS[5:])
    with (tmp_path / ".baton" / "logs" / "tokens.jsonl").open("a") as log:
        log.write('{"ts": "2026-11-2\n')
    report = load_report(tmp_path / ".baton" / "logs" / "tokens.jsonl", None)
    assert [record["ts"] for record in RECORDS if record["event"] != "handoff.received"] == [
        *report.times
    ]
    assert 1 == report.skipped_lines


def test_an_unknown_scenario_or_an_empty_log_is_refused(tmp_path: Path) -> None:
    """An unknown scenario names the known ones; a missing or empty log, or one with nothing
    to draw, says to run first."""
    log = tmp_path / ".baton" / "logs" / "tokens.jsonl"
    with pytest.raises(UsageError, match="no records in the token log"):
        load_report(log, None)
    write_log(tmp_path, RECORDS)
    with pytest.raises(CommandLineError, match="unknown scenario 'nope' — known: leave"):
        load_report(log, "nope")
    log.write_text("", encoding="utf-8")
    with pytest.raises(UsageError, match="no records in the token log"):
        load_report(log, None)
    restarted = {"ts": "2026-11-23T10:00:00Z", "event": "actor.restarted", "actor": "init"}
    log.write_text(json.dumps(restarted) + "\n", encoding="utf-8")
    with pytest.raises(UsageError, match="no model calls, compactions or handoffs in the token"):
        load_report(log, None)


def test_the_command_writes_the_page_and_prints_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`baton report` writes .baton/reports/<scenario or all>.html, or --out, and prints it."""
    write_log(tmp_path, RECORDS)
    assert 0 == main(["report", "--workspace", str(tmp_path)])
    default = tmp_path / ".baton" / "reports" / "all.html"
    assert f"{default}\n" == capsys.readouterr().out
    assert default.read_text(encoding="utf-8").startswith("<!doctype html>")
    # Under .baton/ the page is private like the rest of a run's state.
    assert (0o600, 0o700) == (
        stat.S_IMODE(default.stat().st_mode),
        stat.S_IMODE(default.parent.stat().st_mode),
    )
    out = tmp_path / "page.html"
    assert 0 == main(
        ["report", "--workspace", str(tmp_path), "--scenario", SCENARIO, "--out", str(out)]
    )
    assert f"{out}\n" == capsys.readouterr().out
    assert "baton report — leave" in out.read_text(encoding="utf-8")


def test_the_command_refuses_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No log: exit 1; an unknown scenario: exit 2 naming the known ones; one line each."""
    assert 1 == main(["report", "--workspace", str(tmp_path)])
    missing = capsys.readouterr().err
    assert missing.startswith("baton report: error: no records in the token log at ")
    write_log(tmp_path, RECORDS)
    assert 2 == main(["report", "--workspace", str(tmp_path), "--scenario", "nope"])
    unknown = capsys.readouterr().err
    assert unknown.startswith("baton report: error: unknown scenario 'nope' — known: leave")
    assert [1, 1] == [missing.count("\n"), unknown.count("\n")]


def test_a_file_where_the_log_folder_belongs_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file at `.baton/logs`: report exits 1 in one line naming it and what to do."""
    (tmp_path / ".baton").mkdir()
    (tmp_path / ".baton" / "logs").write_text("not a folder\n", encoding="utf-8")
    assert 1 == main(["report", "--workspace", str(tmp_path)])
    err = capsys.readouterr().err
    assert 1 == len(err.splitlines())
    assert err.startswith(
        f"baton report: error: {tmp_path / '.baton' / 'logs'} is a file, not the log folder — "
        "move it aside"
    )


async def test_a_named_pipe_for_the_token_log_is_refused_without_waiting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A FIFO at `.baton/logs/tokens.jsonl` is named within the deadline, never read."""
    fifo = tmp_path / ".baton" / "logs" / "tokens.jsonl"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    argv = ["report", "--workspace", str(tmp_path)]
    try:
        with anyio.fail_after(5):
            code = await anyio.to_thread.run_sync(main, argv, abandon_on_cancel=True)
    finally:
        unblock(fifo)
    err = capsys.readouterr().err
    assert (1, f"baton report: error: {fifo} is a named pipe, not the token log") == (
        code,
        err.split(" — ")[0],
    )


def test_the_cost_table_takes_the_calls_own_cost_and_prices_older_lines() -> None:
    """A line's `cost_usd` (baton.toml's `[prices]` in it) wins; without one, tokens are
    priced with the prices given."""
    priced = {**call("2026-11-23T10:00:00Z", "init", tokens=(1_000_000, 0, 0, 0))}
    priced["cost_usd"] = 9.0
    older = call("2026-11-23T10:00:00Z", "execute", model="mine", tokens=(1_000_000, 0, 0, 0))
    del older["cost_usd"]
    rows = build_report([priced, older], "all", prices={"mine": ModelPrice.listed(3.0, 1.0)})
    costs = {row.actor: row.cost for row in rows.rows}
    assert {"init": 9.0, "execute": 3.0} == costs
