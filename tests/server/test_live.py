"""`baton run`'s view: the tally folded from token-log records, the summary, the panels."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console

from baton.pipeline.scenario_state import ScenarioState
from baton.runtime.token_log import TokenLog
from baton.server._live import RunView, fill_figure, render_panels
from baton.server._run_summary import RunTally, stored_outputs, summary_lines
from baton.storage import open_storage

SCENARIO = "leave_application"


def call(actor: str, model: str, turn: int, **counts: Any) -> dict[str, Any]:
    """A `model.call` record as the token log hands it to followers."""
    record: dict[str, Any] = {
        "event": "model.call",
        "actor": actor,
        "scenario": SCENARIO,
        "conversation": SCENARIO,
        "model": model,
        "input_tokens": 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 0,
        "context_tokens": 412_000,
        "context_window": 1_000_000,
        "compact_threshold": 700_000,
        "fill": 0.412,
        "latency_ms": 10.0,
        "stop_reason": "tool_use",
        "turn": turn,
    }
    record.update(counts)
    return record


RECORDS: list[dict[str, Any]] = [
    # Opus 5.5 over two calls: 100K in ($0.40), 200K cache writes at 5 min ($1.00), 1M cache
    # reads ($0.20), 50K out ($1.00): $2.60.
    call(
        "init",
        "claude-opus-5-5",
        1,
        input_tokens=60_000,
        cache_creation_input_tokens=200_000,
        output_tokens=20_000,
        tools=["Read"],
    ),
    call(
        "init",
        "claude-opus-5-5",
        2,
        input_tokens=40_000,
        cache_read_input_tokens=1_000_000,
        output_tokens=30_000,
        tools=["Read", "handoff_to_execute"],
    ),
    {
        "event": "context.compacted",
        "actor": "init",
        "scenario": SCENARIO,
        "tokens_before": 9,
        "tokens_after": 3,
        "kept_steps": 1,
        "summary_tokens": 2,
        "mode": "llm",
        "latency_ms": 1.0,
    },
    {
        "event": "handoff.sent",
        "actor": "init",
        "scenario": SCENARIO,
        "from": "init",
        "to": "scheduler",
        "handoff_type": "init_to_execute",
        "package_tokens": 100,
    },
    # The scheduler passing the same handoff on is not a second handoff.
    {
        "event": "handoff.sent",
        "actor": "scheduler",
        "from": "scheduler",
        "to": "execute",
        "handoff_type": "init_to_execute",
        "package_tokens": 100,
    },
    call("execute", "claude-haiku-4-5", 1, input_tokens=10, output_tokens=5),
]


def tally_of(records: list[dict[str, Any]]) -> RunTally:
    tally = RunTally()
    for record in records:
        tally.add(record)
    return tally


def test_the_tally_adds_tokens_per_model_and_counts_compactions_and_handoffs() -> None:
    """Two Opus calls sum per kind of token; one compaction; the scheduler's relay of a
    handoff is not counted again."""
    tally = tally_of(RECORDS)
    opus = tally.models["claude-opus-5-5"]
    assert (2, 100_000, 200_000, 1_000_000, 50_000) == (
        opus.calls,
        opus.input_tokens,
        opus.cache_creation_input_tokens,
        opus.cache_read_input_tokens,
        opus.output_tokens,
    )
    assert (3, 1, 1) == (tally.calls, tally.compactions, tally.handoffs)


def test_an_agents_progress_is_its_latest_call_with_tokens_so_far() -> None:
    """Init's row: step 2, the last tool of its last reply, in = fresh + cache writes."""
    init = tally_of(RECORDS).agents[(SCENARIO, "init")]
    assert (2, "handoff_to_execute", 300_000, 1_000_000, 50_000, 1) == (
        init.turn,
        init.last_tool,
        init.input_tokens,
        init.cached_tokens,
        init.output_tokens,
        init.compactions,
    )


def test_the_summary_prices_each_model_and_marks_an_unknown_price() -> None:
    """Opus costs the hand-computed $2.60; Haiku 5.5 (no price) shows `—*` with a footnote,
    and the total counts the priced models only."""
    lines = summary_lines(tally_of(RECORDS))
    rows = {line.split()[0]: line.split() for line in lines[2:5]}
    assert "baton: summary · 3 model calls · 1 compaction · 1 handoff" == lines[0]
    assert (
        ["claude-opus-5-5", "2", "100,000", "200,000", "1,000,000", "50,000", "$2.60"],
        ["claude-haiku-4-5", "1", "10", "0", "0", "5", "—*"],
        ["total", "3", "100,010", "200,000", "1,000,000", "50,005", "$2.60*"],
    ) == (rows["claude-opus-5-5"], rows["claude-haiku-4-5"], rows["total"])
    assert any(line.startswith("  * no price known for claude-haiku-4-5") for line in lines)


def test_the_summary_names_each_scenarios_iteration_outputs_and_last_report(
    tmp_path: Path,
) -> None:
    """With the scheduler's last report path, the summary lists the iteration folders beside
    it (in number order) and the report."""
    outputs = tmp_path / "scenarios" / SCENARIO / "execution_outputs"
    for number in (1, 2, 10):
        (outputs / f"iteration_{number}").mkdir(parents=True)
    report = f"scenarios/{SCENARIO}/execution_outputs/iteration_10/layer1_problems_report.json"
    state = ScenarioState(scenario=SCENARIO, phase="completed", iteration=10, last_report=report)
    lines = summary_lines(RunTally(), [state], workspace=tmp_path)
    folders = ", ".join(f"{outputs / f'iteration_{n}'}/" for n in (1, 2, 10))
    assert [
        "  no model calls",
        f"  {SCENARIO}: completed (iteration 10)",
        f"    iteration outputs: {folders}",
        f"    last iteration report: {tmp_path / report}",
    ] == lines[1:5]


def test_the_summary_of_a_later_run_lists_its_own_outputs_and_names_the_earlier_runs(
    tmp_path: Path,
) -> None:
    """Run 3 with runs 1 and 2 kept under runs/: the scenario line names the run, the
    outputs are the current run's alone, and one line says where the earlier runs are."""
    folder = tmp_path / "scenarios" / SCENARIO
    (folder / "execution_outputs" / "iteration_1").mkdir(parents=True)
    for run in ("1", "2"):
        (folder / "runs" / run / "execution_outputs" / "iteration_2").mkdir(parents=True)
    report = f"scenarios/{SCENARIO}/execution_outputs/iteration_1/layer1_problems_report.json"
    state = ScenarioState(
        scenario=SCENARIO, phase="completed", iteration=1, run=3, last_report=report
    )
    lines = summary_lines(RunTally(), [state], workspace=tmp_path)
    assert [
        f"  {SCENARIO}: completed (run 3, iteration 1)",
        f"    iteration outputs: {folder / 'execution_outputs' / 'iteration_1'}/",
        f"    last iteration report: {tmp_path / report}",
        f"    earlier runs kept in {folder / 'runs'}/1, 2",
    ] == lines[2:6]


def test_the_fill_figure_is_the_context_against_the_compaction_threshold() -> None:
    """412K of a 700K threshold fills 14 of 24 cells."""
    assert "[##############----------] 412K / 700K" == fill_figure(412_000, 700_000)


def test_the_panel_shows_the_scenario_the_working_agent_and_its_fill() -> None:
    """The panel's title is the scenario with its phase; the agent that called last is marked."""
    view = RunView(io.StringIO(), workspace=Path(), live=False)
    for record in RECORDS:
        view.tally.add(record)
    view.states[SCENARIO] = ScenarioState(scenario=SCENARIO, phase="executing", iteration=1)
    screen = io.StringIO()
    Console(file=screen, width=160).print(render_panels(view))
    text = screen.getvalue()
    marked = [line for line in text.splitlines() if "> " in line]
    assert f"{SCENARIO} · executing · iteration 1" in text
    assert ["execute"] == [name for name in ("init", "execute") if any(name in m for m in marked)]
    assert "412K / 700K" in text


def test_a_pipe_gets_the_plain_view_and_json_logs_turn_the_panel_off() -> None:
    """Live only on a terminal, and not when the log lines share it (`--log-format json`)."""

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    choices = [
        RunView.for_output(io.StringIO(), workspace=Path(), json_logs=False).live,
        RunView.for_output(Terminal(), workspace=Path(), json_logs=True).live,
        RunView.for_output(Terminal(), workspace=Path(), json_logs=False).live,
    ]
    assert [False, False, True] == choices


async def test_records_reach_the_view_in_process_and_a_pipe_gets_plain_lines() -> None:
    """Records emitted on a token log reach the view through `follow`; without a terminal it
    prints one plain line per compaction and handoff, with no escape codes, then the summary."""
    out = io.StringIO()
    view = RunView(out, workspace=Path(), live=False)
    view.started = True  # as `watch_scenarios` marks a run that got going
    async with TokenLog.open(None) as token_log, token_log.follow() as mine:
        with view.showing():
            async with view.following(token_log):
                for record in RECORDS:
                    token_log.emit(
                        record["event"], **{k: v for k, v in record.items() if k != "event"}
                    )
                # This follower has them all once the view's has been handed them too.
                for _ in RECORDS:
                    with anyio.fail_after(5):
                        await mine.receive()
    lines = out.getvalue().splitlines()
    progress = [line.split(" ", 1)[1] for line in lines[:2]]
    assert [
        f"{SCENARIO}: init compacted its context 9 -> 3 tokens",
        f"{SCENARIO}: init handed off (init_to_execute)",
    ] == progress
    assert "baton: summary · 3 model calls · 1 compaction · 1 handoff" == lines[2]
    assert "\x1b" not in out.getvalue()


class Scheduler:
    """Stands in for the runtime where `RunView` asks the scheduler for scenario states."""

    def __init__(self, *rounds: list[ScenarioState]) -> None:
        self._rounds = list(rounds)

    def is_alive(self, name: str) -> bool:
        return True

    async def ask(self, name: str, message: object, timeout: float) -> list[ScenarioState]:
        return self._rounds.pop(0)


async def test_phase_changes_are_lines_and_an_earlier_runs_scenario_stays_out() -> None:
    """A scenario finished before this process is neither a progress line nor in the summary;
    this run's scenario gets a line when its phase moves on (not for `designing` at submit)."""
    old = ScenarioState(scenario="old", phase="completed", iteration=2)
    new = ScenarioState(scenario="new", phase="designing")
    executing = new.model_copy(update={"phase": "executing", "iteration": 1})
    scheduler: Any = Scheduler([old, new], [old, executing])
    out = io.StringIO()
    view = RunView(out, workspace=Path(), live=False)
    with view.showing():
        await view.refresh_states(scheduler)
        await view.refresh_states(scheduler)
    lines = [line.split(" ", 1)[1] for line in out.getvalue().splitlines()]
    assert (["new: executing (iteration 1)"], ["new"]) == (lines, list(view.scenarios()))


async def test_with_a_bucket_the_summary_lists_the_runs_outputs_from_it(
    s3_url: str, tmp_path: Path
) -> None:
    """With `[storage] url`, the summary's iteration folders, last report and earlier runs
    are those in the bucket, named by their urls; the empty workspace lists none."""
    storage = open_storage(s3_url, tmp_path)
    folder = f"scenarios/{SCENARIO}"
    report = f"{folder}/execution_outputs/iteration_10/layer1_problems_report.json"
    for key in (
        f"{folder}/execution_outputs/iteration_2/failure_summary.json",
        report,
        f"{folder}/runs/1/execution_outputs/iteration_1/failure_summary.json",
        f"{folder}/runs/.2.partial/BusinessRules.md",
        f"{folder}/scenario.toml",
    ):
        await storage.write(key, b"{}")
    state = ScenarioState(
        scenario=SCENARIO, phase="completed", iteration=10, run=2, last_report=report
    )
    outputs = await stored_outputs(storage, [state])
    lines = summary_lines(RunTally(), [state], workspace=tmp_path, outputs=outputs)
    where = f"{s3_url}/{folder}"
    assert [
        f"  {SCENARIO}: completed (run 2, iteration 10)",
        f"    iteration outputs: {where}/execution_outputs/iteration_2/, "
        f"{where}/execution_outputs/iteration_10/",
        f"    last iteration report: {s3_url}/{report}",
        f"    earlier runs kept in {where}/runs/1",
    ] == lines[2:6]
