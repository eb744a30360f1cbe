"""What an agent's `Write` never touches: a scenario's `runs/`, its earlier runs' record,
beside its inputs (docs/handoffs.md, "Where `Write` may write")."""

from __future__ import annotations

import pytest

from baton._write_rules import never_written, write_path_problem

RUNS_REASON = "'runs/' in a scenario's folder is the record of its earlier runs"


@pytest.mark.parametrize(
    "path",
    [
        "scenarios/leave/runs/1/BusinessRules.md",
        "scenarios/leave/runs/2/execution_outputs/iteration_1/failure_summary.json",
        "scenarios/leave/runs",
    ],
)
def test_a_scenarios_earlier_runs_are_never_written(path: str) -> None:
    """Anything under `scenarios/<name>/runs/`, and `runs` itself, is refused with why."""
    assert RUNS_REASON == never_written(path.split("/"))


def test_runs_is_refused_whatever_its_case() -> None:
    """`RUNS/` is `runs/` on a case-insensitive filesystem; the reason names it as written."""
    assert "'RUNS/' in a scenario's folder is the record of its earlier runs" == never_written(
        ["scenarios", "leave", "RUNS", "1", "x.md"]
    )


def test_only_the_scenario_folders_own_runs_is_refused() -> None:
    """A `runs/` folder elsewhere (inside `execution_outputs/`, at the root, in notes) is an
    ordinary folder: only `scenarios/<name>/runs/` is the earlier runs' record."""
    paths = [
        "scenarios/leave/runs/1/x.md",
        "scenarios/leave/execution_outputs/runs/x.json",
        "runs/1/x.md",
        "notes/runs/a.md",
    ]
    assert [RUNS_REASON, None, None, None] == [never_written(p.split("/")) for p in paths]


def test_a_write_path_naming_a_scenarios_runs_is_refused() -> None:
    """`[sandbox] write_paths = ["scenarios/leave/runs/"]` is a configuration problem."""
    assert f"'scenarios/leave/runs/' is never writable: {RUNS_REASON}" == write_path_problem(
        "scenarios/leave/runs/"
    )
