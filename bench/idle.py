"""Idle conversations: what one costs in memory, and how fast a passivated one wakes up.

Run: .venv/bin/python bench/idle.py [--sizes 1000,10000] [--tokens 50000] [--steps 100]
     [--runs 3] [--passivate-after 1] [--wakes 30]

A deployment holds thousands of scenario runs waiting hours for an approval or their next
round (docs/context.md, "Idle conversations"). Each conversation here has a journal of
`--tokens` tokens over `--steps` tool steps (the records the agent loop writes, built with
the real `Conversation` API). For each size, in one bench run, two configurations:

- baseline: `passivate_after_s = 0`, every conversation stays in memory once read;
- passivated: `passivate_after_s = --passivate-after`, idle ones leave memory.

Each configuration runs in a fresh process (a child of this script) that embeds baton as
users do (`Runtime.open` + `spawn` of an `AgentActor` keyed by conversation, file journals,
memory mailboxes so the mailbox is not what is measured), brings every conversation into
memory through one message each, waits until they are idle (and, passivated, dropped), and
reads its resident set from /proc, as `ps` and the OOM killer see it. A fresh process per
configuration because CPython rarely gives freed memory back to the system: a process that
once held the baseline would not show what the passivated one needs. Then it opens a round
in `--wakes` of them (a model that answers at once): the wake-up is the time from the ask to
the model call (the journal read back and the conversation rebuilt, passivated), and to the
reply (the round's three durable appends included).

Printed per size and configuration, over `--runs` runs: RSS in all, RSS per idle
conversation (RSS less the process's before the first conversation, over the count) and
the wake-up times, median and range of the runs (each run's figure is its median over the
wakes). Goals: 10,000 idle conversations of 50K tokens in at most 500 MB RSS; a passivated
conversation's first message answered within 50 ms plus the model call. A baseline whose
projected RSS passes `--baseline-limit-mb` is not run (this machine's memory is shared):
its projection from the smaller size's per-conversation figure is printed instead.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from baton import Runtime
from baton.runtime.settings import KernelConfig, RuntimeConfig
from bench._agents import (
    ACTOR,
    Chat,
    Instant,
    Touch,
    Turn,
    chat_setup,
    journal_bytes,
    rss_mb,
    write_journals,
)

IDLE_DEADLINE_S = 600.0


def conversation_ids(count: int) -> list[str]:
    return [f"run-{n:05d}" for n in range(count)]


class Hosted(Chat):
    """The bench's agent, reachable from the bench (the book it keeps)."""

    instances: list[Hosted] = []  # noqa: RUF012 - the bench's one registry

    async def on_start(self) -> None:
        Hosted.instances.append(self)
        await super().on_start()


async def child(args: argparse.Namespace) -> dict[str, Any]:
    workspace = Path(args.workspace)
    conversations = conversation_ids(args.conversations)
    model = Instant()
    config = KernelConfig(runtime=RuntimeConfig(mailbox="memory"))
    async with Runtime.open(workspace, config=config) as rt:
        gc.collect()
        before, _ = rss_mb()
        setup = chat_setup(workspace, model, rt.token_log, passivate_after_s=args.passivate_after)
        # On start the agent reads every journal to find rounds a crash left unfinished.
        await rt.spawn(ACTOR, Hosted, setup)
        book = Hosted.instances[0].loop.book
        started = time.perf_counter()
        for conversation in conversations:
            await rt.ask(ACTOR, Touch(conversation=conversation))
        touched_s = time.perf_counter() - started
        if args.passivate_after > 0:
            give_up = time.monotonic() + IDLE_DEADLINE_S
            while any(book.cached(c) for c in conversations):
                if time.monotonic() > give_up:
                    raise SystemExit("the idle conversations were not passivated in time")
                await anyio.sleep(0.05)  # polling the passivation timer, with a deadline
        gc.collect()
        after, peak = rss_mb()
        resident = sum(book.cached(c) for c in conversations)
        to_call, to_reply = [], []
        for conversation in random.Random(7).sample(conversations, args.wakes):  # noqa: S311
            asked = time.perf_counter()
            await rt.ask(ACTOR, Turn(conversation=conversation, text="The approval came: go on."))
            to_reply.append((time.perf_counter() - asked) * 1000)
            to_call.append((model.calls[-1] - asked) * 1000)
    return {
        "rss_mb": after,
        "peak_mb": peak,
        "base_mb": before,
        "per_conversation_kb": (after - before) * 1024 / len(conversations),
        "resident": resident,
        "touch_s": touched_s,
        "wake_to_call_ms": statistics.median(to_call),
        "wake_to_reply_ms": statistics.median(to_reply),
    }


def run_child(workspace: Path, count: int, passivate_after: float, wakes: int) -> dict[str, Any]:
    command = [
        sys.executable,
        __file__,
        "--child",
        "--workspace",
        str(workspace),
        "--conversations",
        str(count),
        "--passivate-after",
        str(passivate_after),
        "--wakes",
        str(wakes),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
    if done.returncode != 0:
        raise SystemExit(f"child failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def spread(values: list[float], unit: str, digits: int = 1) -> str:
    med = statistics.median(values)
    return f"{med:.{digits}f} {unit} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def report(label: str, runs: list[dict[str, Any]]) -> None:
    print(
        f"  {label:<11} RSS {spread([r['rss_mb'] for r in runs], 'MB')}, "
        f"per idle conversation {spread([r['per_conversation_kb'] for r in runs], 'KB')}, "
        f"peak {spread([r['peak_mb'] for r in runs], 'MB', 0)}, "
        f"resident {runs[0]['resident']}; "
        f"wake-up to model call {spread([r['wake_to_call_ms'] for r in runs], 'ms')}, "
        f"to reply {spread([r['wake_to_reply_ms'] for r in runs], 'ms')}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--tokens", type=int, default=50_000)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--passivate-after", type=float, default=1.0)
    parser.add_argument("--wakes", type=int, default=30)
    parser.add_argument("--baseline-limit-mb", type=float, default=6000.0)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--workspace", help=argparse.SUPPRESS)
    parser.add_argument("--conversations", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(anyio.run(child, args)))
        return
    sizes = sorted(int(s) for s in args.sizes.split(","))
    data = journal_bytes(args.tokens, args.steps)
    print(
        f"journal per conversation: {len(data) / 1024:.0f} KB, ~{args.tokens} tokens, "
        f"{args.steps} steps; passivate_after_s = {args.passivate_after:g}; "
        f"{args.runs} runs, median (range)"
    )
    per_kb: float | None = None
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        write_journals(workspace, conversation_ids(max(sizes)), data)
        for size in sizes:
            print(f"{size} idle conversations:")
            projected = None if per_kb is None else per_kb * size / 1024
            baseline: list[dict[str, Any]] = []
            passivated: list[dict[str, Any]] = []
            for _ in range(args.runs):
                if projected is None or projected <= args.baseline_limit_mb:
                    baseline.append(run_child(workspace, size, 0.0, args.wakes))
                passivated.append(run_child(workspace, size, args.passivate_after, args.wakes))
            if baseline:
                report("baseline", baseline)
                per_kb = statistics.median(r["per_conversation_kb"] for r in baseline)
            else:
                print(
                    f"  baseline    not run: projected RSS {projected:.0f} MB "
                    f"({per_kb:.0f} KB per conversation, measured at the smaller size) "
                    f"is over --baseline-limit-mb"
                )
            report("passivated", passivated)


if __name__ == "__main__":
    main()
