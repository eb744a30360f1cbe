"""Scale-out on Redis: `baton run --actors scheduler` and two `baton worker --actors init,execute`
on one Redis (AOF); one worker is SIGKILLed while it holds a message, the other claims it, and
leave_application completes as a single process would have run it; on one Redis server, and
on a three-primary Redis Cluster named by the URL of one of its nodes.

The kill lands at a seeded random point of the scenario (a number of model calls in), and
only while the victim provably holds an unacked message: it is SIGSTOPped first, and killed
only if Redis still lists the message as pending for it (otherwise it is resumed and the test
waits for the next one). `BATON_SCALE_SEED` replays a seed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import redis
from redis.cluster import key_slot

from tests.e2e.test_crash import logged_calls, model_calls, reply_key, scenario_state
from tests.e2e.test_process import BATON, SCENARIO, Child, env, scenario_workspace
from tests.redis_server import RedisClusterServers, running_redis, running_redis_cluster

DEADLINE = 120.0
POLL = 0.005
CLAIM_IDLE = 1.0
AGENTS = ("init", "execute")


def configure(workspace: Path, url: str) -> None:
    (workspace / "baton.toml").write_text(
        f'[runtime]\nmailbox = "{url}"\n\n'
        f"[runtime.redis]\nclaim_idle = {CLAIM_IDLE}\nlease_ttl = {CLAIM_IDLE}\n",
        encoding="utf-8",
    )


class NodeClients:
    """The test cluster through one plain client per node, each key sent to the node holding
    its slot (redis-py's sync cluster client leaves sockets unclosed after SCAN and XRANGE)."""

    def __init__(self, cluster: RedisClusterServers) -> None:
        self._nodes = [
            (slots, redis.Redis(port=node.port))
            for node, slots in zip(cluster.nodes, cluster.slots, strict=True)
        ]

    def _node(self, key: str | bytes) -> redis.Redis:
        slot = key_slot(key if isinstance(key, bytes) else key.encode())
        return next(client for (first, last), client in self._nodes if first <= slot <= last)

    def __getattr__(self, command: str) -> Callable[..., Any]:
        def call(key: str | bytes, *args: Any, **options: Any) -> Any:
            return getattr(self._node(key), command)(key, *args, **options)

        return call

    def scan_iter(self, match: str) -> Iterator[bytes]:
        for _, client in self._nodes:
            yield from client.scan_iter(match)

    def close(self) -> None:
        for _, client in self._nodes:
            client.close()


Client = redis.Redis | NodeClients


def pending_by_consumer(client: Client) -> Counter[str]:
    """Unacked messages per consumer, over the agents' mailboxes."""
    pending: Counter[str] = Counter()
    for agent in AGENTS:
        stream = f"baton:mailbox:{{{agent}}}"
        if not client.exists(stream):
            continue
        try:
            summary: Any = client.xpending(stream, agent)
        except redis.ResponseError:
            continue  # no group yet
        for consumer in summary.get("consumers") or ():
            pending[consumer["name"].decode()] += int(consumer["pending"])
    return pending


def shared_state(client: Client, workspace: Path) -> dict[str, Any] | None:
    """The scenario's Scheduler record: in Redis beside the mailboxes when the Scheduler keeps
    it there (`baton.pipeline.redis_scenario_store`), else in the workspace."""
    raw: Any = client.get(f"{{baton:scheduler}}:record:{SCENARIO}")
    return json.loads(raw) if raw is not None else scenario_state(workspace)


def redis_steps(client: Client) -> Counter[tuple[str, str, str, int]]:
    """Every model reply journaled in Redis, as test_crash counts them on disk."""
    steps: Counter[tuple[str, str, str, int]] = Counter()
    for key in client.scan_iter("baton:journal:*"):
        _, _, tagged, conversation = key.decode().split(":", 3)
        actor = tagged.strip("{}")
        for raw in client.lrange(key, 0, -1):
            step = reply_key(actor, conversation, json.loads(raw))
            if step is not None:
                steps[step] += 1
    return steps


def start_worker(workspace: Path, index: int) -> tuple[Child, str]:
    # The log on stderr, where `settled_claims` reads the `mailbox.claimed` lines.
    logs = ("--log-format", "json")
    with (workspace / f"worker{index}.err").open("w") as err:
        child = Child(
            [BATON, "worker", "--actors", "init,execute", *logs, "--workspace", str(workspace)],
            stderr=err,
        )
    banner = child.read_line()
    assert banner.startswith("baton worker: init, execute"), banner
    return child, banner.rsplit("consumer ", 1)[1]


def kill_while_holding(
    client: Client,
    workspace: Path,
    workers: dict[str, Child],
    after_calls: int,
    run: subprocess.Popen[str],
    *,
    calls: Callable[[Path], int] = model_calls,
) -> str:
    """SIGKILL the worker that holds an unacked message once `after_calls` model calls are
    logged (`calls` reads them: by default the workspace's token log); returns its consumer
    name."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if calls(workspace) >= after_calls:
            for consumer, count in pending_by_consumer(client).items():
                child = workers.get(consumer)
                if count == 0 or child is None:
                    continue
                child.proc.send_signal(signal.SIGSTOP)
                if pending_by_consumer(client)[consumer] > 0:
                    child.proc.send_signal(signal.SIGKILL)
                    child.proc.wait(timeout=DEADLINE)
                    return consumer
                child.proc.send_signal(signal.SIGCONT)  # it settled meanwhile: not mid-message
        try:  # the poll interval of Redis and the log, waiting on the run's exit meanwhile
            run.wait(timeout=POLL)
        except subprocess.TimeoutExpired:
            continue
        raise AssertionError(f"the scenario ended before a worker held a message ({after_calls})")
    raise AssertionError(f"no worker held a message after {after_calls} model calls")


def late_scheduler_messages(client: Client) -> list[dict[str, Any]]:
    """The envelopes left in the scheduler's stream, decoded."""
    entries = client.xrange("baton:mailbox:{scheduler}")
    return [json.loads(fields[b"e"]) for _, fields in entries]


def settled_claims(client: Client, log: Path, survivor: Child) -> list[dict[str, Any]]:
    """The survivor's `mailbox.claimed` lines, once it has claimed and every agent stream is
    empty again (or the deadline passed: the caller's asserts then say what is missing)."""
    deadline = time.monotonic() + DEADLINE
    while True:
        claims = [
            json.loads(line) for line in log.read_text().splitlines() if '"mailbox.claimed"' in line
        ]
        drained = all(0 == client.xlen(f"baton:mailbox:{{{agent}}}") for agent in AGENTS)
        if (claims and drained) or time.monotonic() > deadline:
            return claims
        try:  # the poll interval, spent waiting on the survivor (which must keep running)
            survivor.proc.wait(timeout=POLL)
        except subprocess.TimeoutExpired:
            continue
        return claims


def test_a_worker_killed_mid_message_is_taken_over_and_the_scenario_completes(
    tmp_path: Path,
) -> None:
    """On one Redis server (AOF), the killed worker's message is claimed by the other."""
    with running_redis(aof=True) as server:
        # The baseline: the whole runtime in one process on Redis (database 1), by --mailbox.
        scale_out(tmp_path, server.url, server.url.removesuffix("/0") + "/1", redis.Redis.from_url)


def test_scale_out_on_a_redis_cluster_survives_a_killed_worker(tmp_path: Path) -> None:
    """On a three-primary cluster, named by one node's URL, the same run ends the same way."""
    with running_redis_cluster() as cluster:
        # A cluster has only database 0: the baseline runs first, and is flushed after.
        scale_out(
            tmp_path,
            cluster.url,
            cluster.url,
            lambda _: NodeClients(cluster),
            between=cluster.flush,
        )


def scale_out(
    tmp_path: Path,
    url: str,
    clean_url: str,
    connect: Callable[[str], Client],
    *,
    between: Callable[[], None] = lambda: None,
) -> None:
    """Two workers and `baton run` on `url`, one worker killed mid-message, compared with a
    baseline run in one process on `clean_url`."""
    seed = int(os.environ.get("BATON_SCALE_SEED", str(random.SystemRandom().randrange(10**6))))
    after_calls = random.Random(seed).randint(3, 80)  # noqa: S311 - a replayable kill point
    context = f"seed {seed}, kill after {after_calls} model calls"

    workspace = scenario_workspace(tmp_path / "shared")
    clean = scenario_workspace(tmp_path / "clean")
    single = subprocess.run(
        [
            BATON, "run", "--mailbox", clean_url, "--submit", SCENARIO, "--auto-approve",
            "--exit-when-idle", "--workspace", str(clean),
        ],
        capture_output=True, text=True, timeout=DEADLINE, env=env(), check=False,
    )  # fmt: skip
    assert 0 == single.returncode, single.stderr[-2000:]
    assert f"ended {SCENARIO}: completed (iteration 2)" in single.stdout
    clean_client = connect(clean_url)
    try:
        baseline = shared_state(clean_client, clean)
        clean_steps = redis_steps(clean_client)
    finally:
        clean_client.close()
    assert baseline is not None
    between()
    assert clean_steps, "the clean run journaled no model reply"
    assert not (clean / ".baton" / "journal").exists()  # journals went to Redis

    configure(workspace, url)
    client = connect(url)
    workers: dict[str, Child] = {}
    run: subprocess.Popen[str] | None = None
    try:
        for index in (1, 2):
            child, consumer = start_worker(workspace, index)
            workers[consumer] = child
        with (workspace / "run.err").open("w") as err:
            run = subprocess.Popen(
                [
                    BATON, "run", "--actors", "scheduler", "--submit", SCENARIO,
                    "--auto-approve", "--exit-when-idle", "--workspace", str(workspace),
                ],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env=env(),
            )  # fmt: skip
        victim = kill_while_holding(client, workspace, workers, after_calls, run)
        output, _ = run.communicate(timeout=DEADLINE)
        assert 0 == run.returncode, f"{context}: {output}"
        assert f"ended {SCENARIO}: completed (iteration 2)" in output, context

        survivor = next(name for name in workers if name != victim)
        # The victim may have held a message the scenario no longer needed (a request
        # already answered, not yet acked): the run can end before the survivor's claim,
        # which comes once the message has been idle for claim_idle.
        claims = settled_claims(
            client, workspace / f"worker{list(workers).index(survivor) + 1}.err",
            workers[survivor],
        )  # fmt: skip
        assert claims, f"{context}: the surviving worker claimed nothing"

        state = shared_state(client, workspace)
        assert state is not None
        assert ("completed", 2) == (state["phase"], state["iteration"]), context
        # No handoff applied twice, none lost: the same as the single-process run.
        assert baseline["applied_handoffs"] == state["applied_handoffs"], context
        # No message lost: every agent stream is empty, nothing dead-lettered; what waits
        # for the (exited) scheduler can only be a handoff it already applied, sent again
        # by the survivor finishing the victim's round after the scenario had ended.
        for name in (*AGENTS, "scheduler"):
            assert 0 == client.xlen(f"baton:dead:{{{name}}}"), (context, name)
        for name in AGENTS:
            assert 0 == client.xlen(f"baton:mailbox:{{{name}}}"), (context, name)
        late = late_scheduler_messages(client)
        assert [] == [m for m in late if m["type"] != "HandoffDelivered"], context
        resent = {m["payload"]["handoff_id"] for m in late}
        assert resent <= set(state["applied_handoffs"]), context
        # No completed model step paid for twice: each journaled reply once; and no call
        # that was logged (so journaled first) was made again.
        steps = redis_steps(client)
        assert [] == [k for k, n in steps.items() if n > 1], context
        assert set(clean_steps) == set(steps), context
        assert [] == [k for k, n in logged_calls(workspace).items() if n > 1], context
    finally:
        stop_all(run, workers, client)


def stop_all(run: subprocess.Popen[str] | None, workers: dict[str, Child], client: Client) -> None:
    """End what a scale-out test started, whatever state its asserts left it in."""
    if run is not None and run.poll() is None:
        run.kill()
        run.communicate()
    for child in workers.values():
        child.stop()
    client.close()
