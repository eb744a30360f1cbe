"""Many hosts, no shared disk (docs/deploy.md): `baton run --actors scheduler` in the folder
that holds the scenario, and two `baton worker`s each in its own empty folder, share only a
Redis (AOF) and a bucket on SeaweedFS. One worker is SIGKILLed while it holds a message, at a
seeded point (`BATON_SCALE_SEED` replays it); leave_application completes with the same
artifacts, byte for byte, as a run in one local process, the workers' folders stay empty, and
every journaled model reply and every logged call is there exactly once.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from collections import Counter
from pathlib import Path

import anyio
import redis

from baton.storage import open_storage
from tests.e2e.test_leave_application_in_a_bucket import local_outputs, stored_outputs
from tests.e2e.test_process import BATON, SCENARIO, Child, env, scenario_workspace
from tests.e2e.test_scale_out import (
    AGENTS,
    DEADLINE,
    kill_while_holding,
    redis_steps,
    settled_claims,
    shared_state,
    stop_all,
)
from tests.redis_server import running_redis

TOKENS = "{baton:tokens}"
# Claims and leases within a second, so the survivor takes the victim's message at once.
FAST_CLAIMS = {"BATON_RUNTIME__REDIS__CLAIM_IDLE": "1.0", "BATON_RUNTIME__REDIS__LEASE_TTL": "1.0"}


def stream_calls(client: redis.Redis) -> Counter[tuple[str, str, str, int]]:
    """`model.call` lines of every process in the shared token-log stream, per (actor,
    conversation, purpose, turn)."""
    calls: Counter[tuple[str, str, str, int]] = Counter()
    for _, fields in client.xrange(TOKENS):
        record = json.loads(fields[b"line"])
        if record.get("event") == "model.call":
            key = (record["actor"], record["conversation"], record["purpose"], record["turn"])
            calls[key] += 1
    return calls


class StreamCount:
    """Counts `model.call` lines in the stream, as `kill_while_holding` counts a workspace's
    token log (it asks with the workspace; here every process's lines are in Redis)."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def __call__(self, _: Path) -> int:
        return sum(stream_calls(self.client).values())


def start_worker(folder: Path, err: Path, shared: list[str]) -> tuple[Child, str]:
    folder.mkdir()
    environ = {**env(), **FAST_CLAIMS}
    with err.open("w") as stream:
        child = Child(
            [BATON, "worker", "--actors", "init,execute", "--log-format", "json", *shared,
             "--workspace", str(folder)],
            stderr=stream,
            environ=environ,
        )  # fmt: skip
    banner = child.read_line()
    assert banner.startswith("baton worker: init, execute"), banner
    return child, banner.rsplit("consumer ", 1)[1]


def test_two_workers_on_other_hosts_one_killed_complete_with_a_local_runs_artifacts(
    tmp_path: Path, s3_url: str
) -> None:
    """The scenario completes with the local run's artifacts in the bucket, nothing in the
    workers' folders, each reply journaled once, each call logged once, and the end report
    drawing the workers' calls from the stream."""
    seed = int(os.environ.get("BATON_SCALE_SEED", str(random.SystemRandom().randrange(10**6))))
    after_calls = random.Random(seed).randint(3, 80)  # noqa: S311 - a replayable kill point
    context = f"seed {seed}, kill after {after_calls} model calls"

    clean = scenario_workspace(tmp_path / "clean")
    single = subprocess.run(
        [BATON, "run", "--submit", SCENARIO, "--auto-approve", "--exit-when-idle",
         "--workspace", str(clean)],
        capture_output=True, text=True, timeout=DEADLINE, env=env(), check=False,
    )  # fmt: skip
    assert 0 == single.returncode, single.stderr[-2000:]
    expected = local_outputs(clean)

    scheduler_host = scenario_workspace(tmp_path / "scheduler")
    with running_redis(aof=True) as server:
        shared = ["--mailbox", server.url, "--storage", s3_url]
        client = redis.Redis.from_url(server.url)
        workers: dict[str, Child] = {}
        folders: dict[str, Path] = {}
        run: subprocess.Popen[str] | None = None
        try:
            for index in (1, 2):
                folder = tmp_path / f"worker{index}"
                child, consumer = start_worker(folder, tmp_path / f"worker{index}.err", shared)
                workers[consumer], folders[consumer] = child, folder
            with (tmp_path / "run.err").open("w") as err:
                run = subprocess.Popen(
                    [BATON, "run", "--actors", "scheduler", *shared, "--submit", SCENARIO,
                     "--auto-approve", "--exit-when-idle", "--workspace", str(scheduler_host)],
                    stdout=subprocess.PIPE, stderr=err, text=True,
                    env={**env(), **FAST_CLAIMS},
                )  # fmt: skip
            count = StreamCount(client)
            victim = kill_while_holding(
                client, scheduler_host, workers, after_calls, run, calls=count
            )
            output, _ = run.communicate(timeout=DEADLINE)
            assert 0 == run.returncode, f"{context}: {output}"
            assert f"ended {SCENARIO}: completed (iteration 2)" in output, context

            survivor = next(name for name in workers if name != victim)
            index = list(workers).index(survivor) + 1
            claims = settled_claims(client, tmp_path / f"worker{index}.err", workers[survivor])
            assert claims, f"{context}: the surviving worker claimed nothing"
            state = shared_state(client, scheduler_host)
            assert state is not None
            assert ("completed", 2) == (state["phase"], state["iteration"]), context
            for name in AGENTS:
                assert 0 == client.xlen(f"baton:mailbox:{{{name}}}"), (context, name)
                assert 0 == client.xlen(f"baton:dead:{{{name}}}"), (context, name)
            assert [] == [k for k, n in redis_steps(client).items() if n > 1], context
            assert [] == [k for k, n in stream_calls(client).items() if n > 1], context
        finally:
            stop_all(run, workers, client)

    stored = anyio.run(stored_outputs, open_storage(s3_url, tmp_path))
    stored.pop("report.html", None)  # the end report page, which a local run keeps in .baton/
    assert sorted(expected) == sorted(stored), context
    assert expected == stored, context
    assert {} == local_outputs(scheduler_host), context  # its scenario folder: inputs only
    left = {name: sorted(p.name for p in folders[name].rglob("*")) for name in workers}
    assert {name: [] for name in workers} == left, context
    page = (scheduler_host / ".baton" / "reports" / f"{SCENARIO}.html").read_text("utf-8")
    assert (">init<" in page, ">execute<" in page) == (True, True), context
