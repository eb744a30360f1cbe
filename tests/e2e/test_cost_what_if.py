"""`baton cost --what-if` on a real offline run of the shipped scenario: the run's own policy,
replayed from the journal, bills what the token log logged, tokens and dollars, within 2%."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from tests.e2e.test_process import BATON, env

SHIPPED = Path(__file__).resolve().parents[2] / "scenarios" / "leave_application"


def baton(workspace: Path, *argv: str) -> str:
    """Run `baton ARGV --workspace WORKSPACE` to the end; its stdout (it must exit 0)."""
    done = subprocess.run(
        [BATON, *argv, "--workspace", str(workspace)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env(),
        check=False,
    )
    assert 0 == done.returncode, done.stderr[-2000:]
    return done.stdout


def test_the_runs_policy_reproduces_the_logged_bill_within_two_percent(tmp_path: Path) -> None:
    """Init, Execute and the Scheduler: the used policy's billed tokens and dollars are within
    2% of the token log's, and each policy is billed under 5-minute and 1-hour caches."""
    shutil.copytree(SHIPPED, tmp_path / "scenarios" / SHIPPED.name)
    baton(tmp_path, "run", "--submit", SHIPPED.name, "--auto-approve", "--exit-when-idle")
    agents = json.loads(baton(tmp_path, "cost", "--what-if", "--json"))["agents"]
    assert ["init", "execute", "scheduler"] == [agent["actor"] for agent in agents]
    for agent in agents:
        [used] = [row for row in agent["rows"] if row["used"]]
        logged = agent["logged"]
        assert logged["calls"] == used["bill"]["calls"]
        assert abs(used["bill"]["billed"] - logged["billed"]) <= 0.02 * logged["billed"]
        assert abs(used["bill"]["cost_usd"] - logged["cost_usd"]) <= 0.02 * logged["cost_usd"]
        assert agent["priced_as_configured"]  # the offline model costs nothing
        caches = {(row["policy"], row["cache"]) for row in agent["rows"]}
        assert {("keep-all", "5m"), ("keep-all", "1h"), ("per-turn-strip", "5m")} <= caches
