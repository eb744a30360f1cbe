"""Scenarios at once: N copies of leave_application submitted together to one `baton run`.

Run: python bench/scenarios.py [--scenarios 8 64] [--delay 2.0] [--keys 64] [--seeds 3]
     [--mailbox M]

Per seed and N it starts a real `baton run` from outside, as a user runs it, in a fresh
workspace holding the shipped scenario under N names (leave_00, leave_01, ...; the seed
shuffles their order), and POSTs every `/scenarios` submit at once, each on its own
connection. The model is the Messages API stand-in (`baton.testing.MessagesAPIStandIn`)
served by this process, answering with the offline scripted model after a fixed `--delay`
seconds: every call the same latency, the Scheduler's task summaries included. Init, Execute
and the Scheduler all get `max_concurrent_keys` and `max_concurrency` = `--keys`, so that with
N <= keys neither the agents' keys nor the model client is the limit: what is left is the
process itself, and the Scheduler, which writes a task summary before every dispatch.

A scenario's wall time runs from the moment the submits are sent to its `scenario.ended` line in
the token log. Prints, per seed and N, the median and longest scenario, the model calls, the
outcomes and the share of a core `baton run` and this process (the stand-in) used: one Python
process works on one core at most, and the machine may run other work, which slows both. Then
per N the median over the seeds (with the range) and the ratio of each N to the first (goal:
64 scenarios at once within 1.5x the wall time per scenario of 8).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path

import anyio
import httpx2
import structlog
from _baton_process import baton_run
from anyio.from_thread import start_blocking_portal

from baton.context.payload import Payload
from baton.models.protocol import ModelResponse
from baton.pipeline.offline_model import OfflineModel
from baton.testing import MessagesAPIStandIn

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = "leave_application"
MODEL = "claude-opus-4-5"  # no thinking blocks to sign: the stand-in's CPU stays small
ACTORS = ("init", "execute", "scheduler")
TOKEN_LOG = Path(".baton") / "logs" / "tokens.jsonl"
POLL = 0.25  # a benchmark's poll of the token log, with a deadline


def workspace(root: Path, names: list[str], *, keys: int | None, mailbox: str | None) -> Path:
    """A workspace holding the shipped scenario once per name, every path renamed."""
    source = ROOT / "scenarios" / SHIPPED
    for name in names:
        folder = root / "scenarios" / name
        folder.mkdir(parents=True)
        for file in ("offline_script.json", "scenario.toml"):
            text = (source / file).read_text(encoding="utf-8")
            (folder / file).write_text(text.replace(SHIPPED, name), encoding="utf-8")
    config = "" if mailbox is None else f'[runtime]\nmailbox = "{mailbox}"\n'
    if keys is not None:
        config += "".join(
            f"[actors.{a}]\nmax_concurrent_keys = {keys}\n" for a in ("init", "execute")
        )
    (root / "baton.toml").write_text(config)
    return root


class DelayedOffline(OfflineModel):
    """The offline scripted model, answering every call after a fixed delay."""

    def __init__(self, workspace: Path, delay: float) -> None:
        super().__init__(workspace)
        self.delay = delay
        self.answered = 0

    async def create(self, payload: Payload) -> ModelResponse:
        self.answered += 1
        await anyio.sleep(self.delay)  # the model's latency, not a wait for a condition
        return await super().create(payload)


def environment(api: MessagesAPIStandIn, keys: int) -> dict[str, str]:
    """What `baton run` is given: the stand-in, and every actor's keys and calls at once."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env |= api.env()
    env["BATON_RUNTIME__SHUTDOWN_TIMEOUT"] = "2"
    for actor in ACTORS:
        prefix = f"BATON_ACTORS__{actor.upper()}__"
        env[prefix + "MODEL"] = MODEL
        env[prefix + "THINKING"] = "off"
        env[prefix + "MAX_CONCURRENT_KEYS"] = str(keys)
        env[prefix + "MAX_CONCURRENCY"] = str(keys)
    return env


def submit(socket: Path, name: str) -> None:
    """POST one scenario; a 504 (the Scheduler busy past the server's deadline) still leaves
    the submit in its mailbox, to be taken later: the wait is part of the figure."""
    with httpx2.Client(transport=httpx2.HTTPTransport(uds=str(socket))) as client:
        reply = client.post(
            "http://baton/scenarios", json={"scenario": name, "auto_approve": True}, timeout=120
        )
    if reply.status_code not in (200, 504):
        raise SystemExit(f"submit {name}: HTTP {reply.status_code}: {reply.text[:500]}")


class Ends:
    """Each ended scenario's `scenario.ended` time (epoch seconds) and outcome, read from the
    token log as it grows (only the lines added since the last read)."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.read = 0
        self.seen: dict[str, tuple[float, str]] = {}

    def poll(self) -> dict[str, tuple[float, str]]:
        if not self.log.exists():
            return self.seen
        if self.log.stat().st_size < self.read:
            self.read = 0  # rotated: the new file from its start
        with self.log.open("rb") as file:
            file.seek(self.read)
            data = file.read()
        whole = data[: data.rfind(b"\n") + 1]  # a line being written waits for the next read
        self.read += len(whole)
        for line in whole.decode("utf-8").splitlines():
            if '"scenario.ended"' in line:
                record = json.loads(line)
                at = datetime.fromisoformat(record["ts"].replace("Z", "+00:00")).timestamp()
                self.seen[record["scenario"]] = (at, record["outcome"])
        return self.seen


def cpu_seconds(pid: int) -> float:
    """CPU seconds process `pid` has used so far (/proc/PID/stat: utime + stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(n: int, seed: int, args: argparse.Namespace) -> tuple[list[float], int, str]:
    """One `baton run` with `n` scenarios submitted at once: each one's wall time, the model
    calls made, and the outcomes counted with the share of a core `baton run` and this
    process (the stand-in) used: one Python process works on one core at most."""
    names = [f"leave_{i:02d}" for i in range(n)]
    random.Random(seed).shuffle(names)  # noqa: S311 - an order to replay, not a secret
    with ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="baton-scenarios-")))
        workspace(root, sorted(names), keys=None, mailbox=args.mailbox)
        model = DelayedOffline(root, args.delay)
        # Served from a thread of its own, on the asyncio backend uvicorn needs; replies in
        # large chunks, so that streaming them costs little CPU on either side.
        portal = stack.enter_context(start_blocking_portal(backend="asyncio"))
        api = stack.enter_context(
            portal.wrap_async_context_manager(MessagesAPIStandIn(model=model, chunk_chars=4096))
        )
        socket = stack.enter_context(baton_run(root, env=environment(api, args.keys)))
        pid = int((root / ".baton" / "baton.pid").read_text().split()[0])
        started, used, own = time.time(), cpu_seconds(pid), time.process_time()
        with ThreadPoolExecutor(max_workers=n) as pool:
            list(pool.map(lambda name: submit(socket, name), names))
        give_up, log = time.monotonic() + args.deadline, Ends(root / TOKEN_LOG)
        while len(ends := log.poll()) < n:
            if time.monotonic() > give_up:
                raise SystemExit(f"{n - len(ends)} of {n} scenarios had not ended in time")
            api.requests.clear()  # kept by the stand-in for tests: gigabytes over a run here
            time.sleep(POLL)
        wall = time.time() - started
        used, own = cpu_seconds(pid) - used, time.process_time() - own
        outcomes: dict[str, int] = {}
        for _, outcome in ends.values():
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
        counted = ",".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
        counted += f"; cpu: baton run {used / wall:.0%}, stand-in {own / wall:.0%} of a core"
        return [at - started for at, _ in ends.values()], model.answered, counted


def main(args: argparse.Namespace) -> None:
    print(
        f"model delay {args.delay:g} s per call (task summaries included) · "
        f"max_concurrent_keys and max_concurrency {args.keys} for {', '.join(ACTORS)} · "
        f"{args.seeds} seeds · {os.cpu_count()} cores",
        flush=True,
    )
    medians: dict[int, list[float]] = {n: [] for n in args.scenarios}
    for seed in range(args.seeds):
        for n in args.scenarios:
            times, calls, outcomes = one_run(n, seed, args)
            medians[n].append(statistics.median(times))
            print(
                f"  seed {seed} scenarios {n:>3}: per scenario median "
                f"{statistics.median(times):6.1f} s, longest {max(times):6.1f} s, "
                f"{calls} model calls, {outcomes}",
                flush=True,
            )
    first = statistics.median(medians[args.scenarios[0]])
    against = f"vs {args.scenarios[0]}"
    print(f"{'scenarios':>9}  {'s/scenario':>10}  {'range':>13}  {against:>6}")
    for n in args.scenarios:
        figures = medians[n]
        median = statistics.median(figures)
        print(
            f"{n:>9}  {median:>10.1f}  {min(figures):>6.1f}–{max(figures):<6.1f}  "
            f"{median / first:>5.2f}x"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--delay", type=float, default=2.0, help="seconds per model call")
    parser.add_argument("--keys", type=int, default=64, help="max_concurrent_keys, and calls")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--mailbox", help="runtime.mailbox (default: configured)")
    parser.add_argument("--deadline", type=float, default=1800.0, help="seconds per run")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    main(args)
