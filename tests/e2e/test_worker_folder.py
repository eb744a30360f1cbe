"""A worker on another host keeps nothing in its own folder: `baton worker --storage s3://…
--mailbox redis://…` started in an empty directory, with `baton run --actors scheduler`
elsewhere, runs leave_application's rounds and leaves the directory empty, its compaction
audits in the bucket (docs/storage.md, "A worker's own directory")."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio

from baton.storage import open_storage
from tests.e2e.test_process import BATON, SCENARIO, Child, env, scenario_workspace
from tests.e2e.test_scale_out import DEADLINE
from tests.redis_server import running_redis


async def stored_keys(s3_url: str, workspace: Path) -> list[str]:
    """Every key under the url's prefix."""
    return [item.path for item in (await open_storage(s3_url, workspace).list()).objects]


def test_a_worker_with_a_bucket_and_redis_leaves_its_folder_empty(
    tmp_path: Path, s3_url: str
) -> None:
    """After the scenario completes, the worker's folder holds nothing (no `.baton/`, no
    scenario file), its log went to stderr, and its agents' compaction audits are objects in
    the bucket under `.baton/compactions/`."""
    scheduler_host = scenario_workspace(tmp_path / "scheduler")
    worker_host = tmp_path / "worker"
    worker_host.mkdir()
    with running_redis() as server:
        shared = ["--mailbox", server.url, "--storage", s3_url]
        with (tmp_path / "worker.err").open("w") as err:
            worker = Child(
                [BATON, "worker", "--actors", "init,execute", *shared,
                 "--workspace", str(worker_host)],
                stderr=err,
            )  # fmt: skip
        try:
            assert worker.read_line().startswith("baton worker: init, execute")
            run = subprocess.run(
                [BATON, "run", "--actors", "scheduler", *shared, "--submit", SCENARIO,
                 "--auto-approve", "--exit-when-idle", "--workspace", str(scheduler_host)],
                capture_output=True, text=True, timeout=DEADLINE, env=env(), check=False,
            )  # fmt: skip
        finally:
            assert 0 == worker.stop()
    assert 0 == run.returncode, run.stderr[-2000:]
    assert [] == sorted(path.relative_to(worker_host) for path in worker_host.rglob("*"))
    logged = (tmp_path / "worker.err").read_text(encoding="utf-8")
    keys = anyio.run(stored_keys, s3_url, tmp_path)
    audits = [key for key in keys if key.startswith(".baton/compactions/")]
    assert (True, True) == ('"worker.stopping"' in logged, bool(audits))
