"""`baton run` under a file-size limit (`ulimit -f`): the scenario whose journal may not grow
ends failed with the reason, and `--exit-when-idle` exits 1 instead of waiting for room."""

from __future__ import annotations

import resource
import subprocess
from pathlib import Path

from tests.e2e.test_leave_application import NAME, workspace
from tests.e2e.test_process import BATON, DEADLINE, env

# Above what Init's journal reaches in the whole scenario (about 300 KB), below Execute's
# (about 1.8 MB): Execute's journal is the file that reaches it.
LIMIT = 600 * 1024


def _limit_file_size() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, hard))


def test_exit_when_idle_exits_1_when_a_journal_reaches_the_file_size_limit(
    tmp_path: Path,
) -> None:
    """Execute's journal reaches the limit: the scenario ends `failed` naming the journal and
    the limit, and `baton run --exit-when-idle` exits 1 naming the scenario, in time."""
    ws = workspace(tmp_path)
    argv = [BATON, "run", "--submit", NAME, "--auto-approve", "--exit-when-idle"]
    run = subprocess.run(
        [*argv, "--workspace", str(ws)],
        capture_output=True,
        text=True,
        timeout=3 * DEADLINE,
        env=env(),
        check=False,
        preexec_fn=_limit_file_size,  # only setrlimit, in the child before exec
    )
    journal = ws / ".baton" / "journal" / "execute" / f"{NAME}.jsonl"
    why = (
        f"FileTooLargeFailure: {journal} cannot grow (File too large): this process may write "
        f"files of at most {LIMIT:,} bytes (ulimit -f)"
    )
    [ended] = [line for line in run.stdout.splitlines() if line.startswith("ended ")]
    error = run.stderr.strip().splitlines()[-1]
    assert 1 == run.returncode, run.stderr[-3000:]
    assert ended.startswith(f"ended {NAME}: failed")
    assert why in ended
    assert error.startswith(f"baton run: error: 1 scenario(s) did not complete: {NAME} (failed)")
