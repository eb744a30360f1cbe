"""The token log of a scaled-out deployment: `baton tail --mailbox` shows the lines of
`baton run --actors scheduler` and of a `baton worker`, each naming its process, from a
folder that holds no token log (docs/token-log.md, "Across processes")."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

from tests.e2e.test_process import BATON, SCENARIO, Child, env, scenario_workspace
from tests.e2e.test_scale_out import DEADLINE, configure, start_worker
from tests.redis_server import running_redis


def consumers_seen(tail: Child, wanted: set[str]) -> set[str]:
    """The `process` values of the lines `tail` prints, read until all of `wanted` are seen."""
    seen: set[str] = set()
    deadline = time.monotonic() + DEADLINE
    while not wanted <= seen:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"saw only {seen} of {wanted}"
        seen.add(json.loads(tail.read_line(remaining))["process"])
    return seen


def test_tail_mailbox_shows_the_run_and_the_worker_lines(tmp_path: Path) -> None:
    """`baton tail -f --mailbox` started before the deployment prints lines of both the run
    and the worker (by their consumer names); once both have stopped, `baton tail --mailbox`
    prints exactly the lines their shared workspace's file holds."""
    workspace = scenario_workspace(tmp_path / "shared")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with running_redis() as server:
        configure(workspace, server.url)
        on_redis = ["--mailbox", server.url, "--json", "--workspace", str(elsewhere)]
        tail = Child([BATON, "tail", "-f", *on_redis])
        worker, worker_name = start_worker(workspace, 1)
        try:
            run = subprocess.run(
                [
                    BATON, "run", "--actors", "scheduler", "--submit", SCENARIO,
                    "--auto-approve", "--exit-when-idle", "--workspace", str(workspace),
                ],
                capture_output=True, text=True, timeout=DEADLINE, env=env(), check=False,
            )  # fmt: skip
            assert 0 == run.returncode, run.stderr[-2000:]
            found = re.search(r"consumer (\S+)", run.stdout)
            assert found is not None, run.stdout
            run_name = found.group(1)
            assert {run_name, worker_name} <= consumers_seen(tail, {run_name, worker_name})
        finally:
            assert 0 == worker.stop()
            tail.stop()
        printed = subprocess.run(
            [BATON, "tail", *on_redis], capture_output=True, text=True, timeout=DEADLINE,
            env=env(), check=True,
        )  # fmt: skip
    in_file = (workspace / ".baton" / "logs" / "tokens.jsonl").read_text().splitlines()
    assert sorted(in_file) == sorted(printed.stdout.splitlines())
