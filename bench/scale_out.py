"""Scale-out: model calls per second through 1, 2 and 4 `baton worker` processes, each in its
own directory, sharing one Redis and one S3 bucket (docs/deploy.md).

Run: python bench/scale_out.py [--workers 1 2 4] [--scenarios 32] [--delay 2.0] [--calls 4]
     [--warmup 20] [--window 30] [--seeds 3] [--workspaces separate|shared] [--writes 200]

Per seed and worker count it starts a fresh deployment from outside, as an operator would: a
real redis-server (AOF, tests/redis_server.py), a SeaweedFS (tests/seaweed_server.py; a new
prefix per run), `baton worker --actors init,execute --storage s3://...` processes, then
`baton run --actors scheduler --storage s3://... --auto-approve --submit ...` with N copies of
leave_application (the seed shuffles their order). Every process talks to the Messages API
stand-in (`baton.testing.MessagesAPIStandIn`) served by this process, which answers with the
offline scripted model after a fixed `--delay` seconds: a model's latency, the same for every
call. Each worker makes at most `--calls` model calls at once (`max_concurrency`: Init and
Execute use one model here, so they share that limit, README.md, "Configuration"), whatever
mix of designing and executing scenarios it holds; one worker's capacity is then well below
what 32 scenarios ask for, and the question is whether each added worker adds its own. The
delay (2 s by default) is chosen so that the model, not the 2-core machine, is the limit: the
deployment's processes use under a third of the CPU with 4 workers, printed beside them.

Prints, per worker count, the Init and Execute model calls answered per second over
`--window` seconds after `--warmup` (median over the seeds, with the range), the ratio
against one worker (goal: 4 workers >= 3x one), the share of the machine's CPU the
deployment's processes used (this one included), the scenarios' phases at the end and the
files left in the workers' directories (none is the goal: docs/deploy.md); then
the added latency of an artifact write that goes to the bucket instead of the local folder
(`Storage.write`, median over `--writes` writes).

`--workspaces shared` runs every worker in the scheduler's directory, for a checkout whose
agents still write their artifacts to the workspace (docs/storage.md, "What is stored where");
`separate` (the default) gives each worker an empty directory of its own.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import random
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import ModuleType

import anyio
import httpx2
import structlog
from _baton_process import BATON, baton_run
from anyio.from_thread import start_blocking_portal

from baton.context.payload import Payload
from baton.models.protocol import ModelResponse, current_call
from baton.pipeline.offline_model import OfflineModel
from baton.storage import open_storage
from baton.testing import MessagesAPIStandIn
from scenarios import workspace as scenario_workspace

ROOT = Path(__file__).resolve().parent.parent
BUCKET = "bench"
MODEL = "claude-opus-4-5"  # no thinking blocks to sign: the stand-in's CPU stays small
AGENTS = ("init", "execute")
START_DEADLINE = 60.0
STOP_DEADLINE = 20.0
POLL = 0.05  # a benchmark's poll interval on a process's output, with a deadline


def load_helper(name: str) -> ModuleType:
    """tests/<name>.py, imported by path: the tests are not a package."""
    path = ROOT / "tests" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class DelayedOffline(OfflineModel):
    """The offline scripted model, answering every Init and Execute call after a fixed delay
    and recording when. The Scheduler's task summaries are answered at once: they are made
    in the Scheduler's own process, which this benchmark does not add more of (the Scheduler
    under many scenarios is `bench/scenarios.py`'s figure)."""

    def __init__(self, workspace: Path, delay: float) -> None:
        super().__init__(workspace)
        self.delay = delay
        self.answered: list[float] = []

    async def create(self, payload: Payload) -> ModelResponse:
        call = current_call()
        agent = call is not None and call.actor in AGENTS
        if agent:
            await anyio.sleep(self.delay)  # the model's latency, not a wait for a condition
        response = await super().create(payload)
        if agent:
            self.answered.append(time.monotonic())
        return response


def cpu_seconds(pids: list[int]) -> float:
    """CPU seconds used so far by the deployment's processes (/proc/PID/stat): the machine
    may run other work, which its own busy share would count."""
    ticks = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def environment(api: MessagesAPIStandIn, store: dict[str, str], calls: int) -> dict[str, str]:
    """What every baton process of the deployment is given: the stand-in, the bucket's
    credentials and the configuration, all as variables (an empty directory has no
    baton.toml)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "AWS_"))}
    env |= api.env() | store
    env["BATON_RUNTIME__SHUTDOWN_TIMEOUT"] = "2"
    for agent in (*AGENTS, "scheduler"):
        env[f"BATON_ACTORS__{agent.upper()}__MODEL"] = MODEL
        env[f"BATON_ACTORS__{agent.upper()}__THINKING"] = "off"
    for agent in AGENTS:
        env[f"BATON_ACTORS__{agent.upper()}__MAX_CONCURRENCY"] = str(calls)
    return env


@contextmanager
def workers(
    count: int, directories: list[Path], mailbox: str, storage: str, env: dict[str, str]
) -> Iterator[list[int]]:
    """`count` `baton worker --actors init,execute` processes, until the block ends; yields
    their pids once each has printed its banner."""
    processes: list[subprocess.Popen[bytes]] = []
    arguments = ["--actors", "init,execute", "--mailbox", mailbox, "--storage", storage]
    arguments += ["--log-format", "json"]
    try:
        for index, directory in enumerate(directories[:count]):
            out = directory.parent / f"worker{index}.out"
            with (
                out.open("wb") as stdout,
                (directory.parent / f"worker{index}.err").open("wb") as err,
            ):
                processes.append(
                    subprocess.Popen(  # noqa: S603 - this venv's own `baton`
                        [BATON, "worker", "--workspace", str(directory), *arguments],
                        cwd=directory,
                        stdin=subprocess.DEVNULL,
                        stdout=stdout,
                        stderr=err,
                        env=env,
                    )
                )
        give_up = time.monotonic() + START_DEADLINE
        for index, process in enumerate(processes):
            banner = directories[0].parent / f"worker{index}.out"
            while b"baton worker:" not in banner.read_bytes():
                if process.poll() is not None:
                    said = (banner.parent / f"worker{index}.err").read_text(errors="replace")
                    raise SystemExit(f"baton worker {index} exited at start: {said[-2000:]}")
                if time.monotonic() > give_up:
                    raise SystemExit(f"baton worker {index} printed no banner in time")
                time.sleep(POLL)
        yield [process.pid for process in processes]
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=STOP_DEADLINE)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def phases(socket: Path) -> str:
    """The scenarios' phases as `baton status` reports them, counted."""
    transport = httpx2.HTTPTransport(uds=str(socket))
    with httpx2.Client(transport=transport) as client:
        body = client.get("http://baton/status", timeout=10).json()
    counts: dict[str, int] = {}
    for scenario in body.get("scenarios") or ():
        counts[scenario["phase"]] = counts.get(scenario["phase"], 0) + 1
    return ",".join(f"{phase} {n}" for phase, n in sorted(counts.items()))


def one_run(
    count: int,
    seed: int,
    args: argparse.Namespace,
    redis: ModuleType,
    servers: tuple[object, object],
) -> tuple[float, float, str]:
    """One deployment of `count` workers: (calls per second, the share of the machine's CPU
    its processes used, the scenarios' phases at the end and what the workers left)."""
    redis_server, seaweed = servers
    redis.command(redis_server.port, "FLUSHALL")  # type: ignore[attr-defined]
    storage = f"s3://{BUCKET}/seed{seed}-workers{count}"
    names = [f"leave_{i:02d}" for i in range(args.scenarios)]
    random.Random(seed).shuffle(names)  # noqa: S311 - an order to replay, not a secret
    with ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="baton-scale-")))
        scheduler_dir = root / "scheduler"
        scheduler_dir.mkdir()
        scenario_workspace(scheduler_dir, sorted(names), keys=None, mailbox=None)
        model = DelayedOffline(scheduler_dir, args.delay)
        # The stand-in is served from a thread of its own, on the asyncio backend uvicorn needs.
        portal = stack.enter_context(start_blocking_portal(backend="asyncio"))
        api = stack.enter_context(
            portal.wrap_async_context_manager(MessagesAPIStandIn(model=model))
        )
        env = environment(api, seaweed.environ(), args.calls)  # type: ignore[attr-defined]
        directories = []
        for index in range(count):
            directory = scheduler_dir if args.workspaces == "shared" else root / f"w{index}"
            directory.mkdir(exist_ok=True)
            directories.append(directory)
        mailbox = redis_server.url  # type: ignore[attr-defined]
        submits = [part for name in names for part in ("--submit", name)]
        with ExitStack() as processes:
            pids = processes.enter_context(workers(count, directories, mailbox, storage, env))
            socket = processes.enter_context(
                baton_run(
                    scheduler_dir,
                    "--actors",
                    "scheduler",
                    "--mailbox",
                    mailbox,
                    "--storage",
                    storage,
                    "--auto-approve",
                    *submits,
                    env=env,
                )
            )
            pids += [int((scheduler_dir / ".baton" / "baton.pid").read_text().split()[0])]
            pids += [os.getpid(), redis_server.pid, seaweed.pid]  # type: ignore[attr-defined]
            time.sleep(args.warmup)  # the deployment fills its workers' slots
            begin, used = time.monotonic(), cpu_seconds(pids)
            time.sleep(args.window)  # the measured window
            end, used = time.monotonic(), cpu_seconds(pids) - used
            state = phases(socket)
        if args.workspaces == "separate":  # each worker's own directory, after it stopped
            left = sum(1 for directory in directories for _ in directory.rglob("*"))
            state += f"; {left} files left in the workers' directories"
        answered = sum(1 for t in model.answered if begin <= t < end)
        cores = os.cpu_count() or 1
        return answered / (end - begin), used / ((end - begin) * cores), state


async def write_latency(store_env: dict[str, str], writes: int, size: int) -> tuple[float, float]:
    """Median seconds of one `Storage.write` to the bucket and to a local folder."""
    data = json.dumps({"pad": "x" * size}).encode()[:size]
    medians = []
    with tempfile.TemporaryDirectory() as tmp:
        for url in (f"s3://{BUCKET}/latency", ""):
            store = open_storage(url, Path(tmp), store_env)
            timings = []
            for i in range(writes):
                started = time.perf_counter()
                await store.write(f"scenarios/bench/execution_outputs/iteration_1/{i}.json", data)
                timings.append(time.perf_counter() - started)
            medians.append(statistics.median(timings))
    return medians[0], medians[1]


def main(args: argparse.Namespace) -> None:
    redis = load_helper("redis_server")
    seaweed_helper = load_helper("seaweed_server")
    with redis.running_redis(aof=True) as redis_server, seaweed_helper.running_seaweed() as seaweed:
        seaweed.create_bucket(BUCKET)
        print(
            f"{args.scenarios} scenarios · model delay {args.delay:g} s per call · "
            f"at most {args.calls} calls at once per worker · workspaces {args.workspaces} "
            f"· window {args.window:g} s after {args.warmup:g} s · {os.cpu_count()} cores",
            flush=True,
        )
        results: dict[int, list[float]] = {n: [] for n in args.workers}
        cpu: dict[int, list[float]] = {n: [] for n in args.workers}
        for seed in range(args.seeds):
            for count in args.workers:
                rate, busy, state = one_run(count, seed, args, redis, (redis_server, seaweed))
                results[count].append(rate)
                cpu[count].append(busy)
                print(
                    f"  seed {seed} workers {count}: {rate:.2f} calls/s, cpu {busy:.0%}, {state}",
                    flush=True,
                )
        one = statistics.median(results[args.workers[0]])
        print(f"{'workers':>7}  {'calls/s':>8}  {'range':>13}  {'vs one':>6}  {'cpu':>5}")
        for count in args.workers:
            rates = results[count]
            median = statistics.median(rates)
            print(
                f"{count:>7}  {median:>8.2f}  {min(rates):>6.2f}–{max(rates):<6.2f}  "
                f"{median / one:>5.2f}x  {statistics.median(cpu[count]):>5.0%}"
            )
        bucket, folder = anyio.run(write_latency, seaweed.environ(), args.writes, args.write_bytes)
        print(
            f"Storage.write of {args.write_bytes:,} bytes, median of {args.writes}: bucket "
            f"{bucket * 1000:.2f} ms, local folder {folder * 1000:.2f} ms, added by the round "
            f"trip {(bucket - folder) * 1000:.2f} ms"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--scenarios", type=int, default=32)
    parser.add_argument("--delay", type=float, default=2.0, help="seconds per model call")
    parser.add_argument("--calls", type=int, default=4, help="max_concurrency per worker")
    parser.add_argument("--warmup", type=float, default=20.0)
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--workspaces", choices=("separate", "shared"), default="separate")
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--write-bytes", type=int, default=4096)
    logging.disable(logging.CRITICAL)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    main(parser.parse_args())
