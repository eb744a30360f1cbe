"""The shipped leave_application run offline twice in one workspace by `baton run`: run 2
writes in run 1's places only once run 1's files are kept, untouched, in `runs/1/`, and its
summary speaks of its own outputs (docs/handoffs.md, "Earlier runs")."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.e2e.test_process import BATON, SCENARIO, env, scenario_workspace

RUN = [BATON, "run", "--submit", SCENARIO, "--auto-approve", "--exit-when-idle"]
INPUTS = ("scenario.toml", "offline_script.json")


def files(folder: Path, *, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Every file under `folder` but those in `skip` (top-level names), with its bytes."""
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in folder.rglob("*")
        if path.is_file() and path.relative_to(folder).parts[0] not in skip
    }


def run(workspace: Path) -> list[str]:
    """One `baton run` of the scenario to its end; its stdout lines."""
    done = subprocess.run(
        RUN, cwd=workspace, capture_output=True, text=True, timeout=120, env=env(), check=False
    )
    assert 0 == done.returncode, done.stderr[-2000:]
    return done.stdout.splitlines()


def listed_outputs(lines: list[str]) -> list[str]:
    """The iteration folders the end-of-run summary lists."""
    (listed,) = [line for line in lines if line.startswith("    iteration outputs: ")]
    return listed.removeprefix("    iteration outputs: ").split(", ")


def test_a_second_run_keeps_the_first_runs_files_and_reports_only_its_own(
    tmp_path: Path,
) -> None:
    """After run 1 (here given a stale third iteration, as a longer run leaves), run 2
    completes; run 1's design files and iterations are byte for byte in runs/1/, the inputs
    stay, and run 2's summary lists its two iterations alone and names runs/1."""
    ws = scenario_workspace(tmp_path)
    folder = ws / "scenarios" / SCENARIO
    run(ws)
    stale = folder / "execution_outputs" / "iteration_3" / "failure_summary.json"
    stale.parent.mkdir()
    stale.write_text('{"iteration": 3}')
    first = files(folder, skip=INPUTS)
    inputs = {name: (folder / name).read_bytes() for name in INPUTS}
    lines = run(ws)
    assert first == files(folder / "runs" / "1")
    assert {"execution_outputs/iteration_3/failure_summary.json"} <= set(first)
    outputs = f"scenarios/{SCENARIO}/execution_outputs"
    assert [f"{outputs}/iteration_1/", f"{outputs}/iteration_2/"] == listed_outputs(lines)
    assert ["iteration_1", "iteration_2"] == sorted(p.name for p in (ws / outputs).iterdir())
    assert f"  {SCENARIO}: completed (run 2, iteration 2)" in lines
    assert f"    earlier runs kept in scenarios/{SCENARIO}/runs/1" in lines
    assert inputs == {name: (folder / name).read_bytes() for name in INPUTS}
