"""Resume after kill -9: time from process start to the first model call of a resumed round.

Run: .venv/bin/python bench/resume.py [--shapes 100000:500,...] [--runs 5]

A process was killed in the middle of a round: the conversation's journal holds `tokens`
tokens over `steps` tool steps (the records the agent loop writes, built with the real
`Conversation` API), and its last step asked for a tool whose result is journaled, so the
next move is a model call. For each shape, a fresh process (`python bench/resume.py
--child`, embedding baton as users do: `Runtime.open` on the workspace with its default
SQLite mailbox, `spawn` of an `AgentActor` over file journals) starts; on start the agent
finds the unfinished round, reads the journal back, rebuilds the conversation and calls
the model. The figure is the wall time from just before the process is started to the
model call, taken from outside (the child notes the call's wall-clock time). The child
also reports where the time went: interpreter and imports, `Runtime.open`, the journal
read, the rebuild, and the rest (actor start, context assembly).

Baseline, in the same run: the same process with no journal (the agent's first round of a
new conversation, opened by a `Prompt`), so "resumed − baseline" is what the history costs.
Goal: 1 s for 100K tokens over 500 steps. Median and range over `--runs` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

STARTED = time.time()  # the child's own clock, before its imports

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio  # noqa: E402 - timed: the imports are part of a start

from baton import Runtime  # noqa: E402
from baton.agents.journal import FileJournalStore  # noqa: E402
from baton.agents.messages import Prompt  # noqa: E402
from bench._agents import (  # noqa: E402
    ACTOR,
    Chat,
    Instant,
    chat_setup,
    journal_bytes,
    write_journals,
)

IMPORTED = time.time()
DEFAULT_SHAPES = "100000:500,50000:250,200000:1000,100000:100,100000:2000"


async def child(workspace: Path, fresh: bool) -> None:
    model = Instant()
    timings = {"read_ms": 0.0, "rebuild_ms": 0.0}
    read = FileJournalStore.read

    async def timed_read(store: FileJournalStore, actor: str, conversation: str) -> Any:
        began = time.perf_counter()
        try:
            return await read(store, actor, conversation)
        finally:
            timings["read_ms"] += (time.perf_counter() - began) * 1000

    FileJournalStore.read = timed_read  # type: ignore[method-assign, assignment]
    opened = 0.0
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            await model.called.wait()
            result = {
                "first_call": model.first_call_wall,
                "imports_ms": (IMPORTED - STARTED) * 1000,
                "open_ms": (opened - IMPORTED) * 1000,
                **timings,
            }
            print(json.dumps(result), flush=True)
            os._exit(0)  # measured: the shutdown is not part of a start

        group.start_soon(watch)
        async with Runtime.open(workspace) as rt:
            opened = time.time()
            setup = chat_setup(workspace, model, rt.token_log)
            loop_load = Chat.__init__

            def instrumented(actor: Chat, *args: Any) -> None:
                loop_load(actor, *args)
                load = actor.loop.book._load

                def timed_load(conversation: str, records: list[dict[str, Any]]) -> Any:
                    began = time.perf_counter()
                    try:
                        return load(conversation, records)
                    finally:
                        timings["rebuild_ms"] += (time.perf_counter() - began) * 1000

                actor.loop.book._load = timed_load

            Chat.__init__ = instrumented  # type: ignore[method-assign, assignment]
            await rt.spawn(ACTOR, Chat, setup)
            if fresh:
                await rt.ask(ACTOR, Prompt(text="Start the work."))
            await anyio.sleep_forever()


def run_child(workspace: Path, fresh: bool) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", "--workspace", str(workspace)]
    if fresh:
        command.append("--fresh")
    began = time.time()
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)  # noqa: S603
    if done.returncode != 0 or not done.stdout.strip():
        raise SystemExit(f"child failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["total_ms"] = (result["first_call"] - began) * 1000
    result["rest_ms"] = (
        result["total_ms"]
        - result["imports_ms"]
        - result["open_ms"]
        - result["read_ms"]
        - result["rebuild_ms"]
    )
    return result


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} ms ({min(values):.0f}-{max(values):.0f})"


def report(label: str, runs: list[dict[str, Any]]) -> None:
    parts = ", ".join(
        f"{name} {statistics.median(r[f'{name}_ms'] for r in runs):.0f}"
        for name in ("imports", "open", "read", "rebuild", "rest")
    )
    print(f"  {label:<34} {spread([r['total_ms'] for r in runs])}   [{parts} ms]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default=DEFAULT_SHAPES, help="tokens:steps,...")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--fresh", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--workspace", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        anyio.run(child, Path(args.workspace), args.fresh)
        return
    print(f"process start to first model call, {args.runs} runs, median (range)")
    baseline: list[dict[str, Any]] = []
    results: dict[str, list[dict[str, Any]]] = {}
    shapes = [tuple(map(int, shape.split(":"))) for shape in args.shapes.split(",")]
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            baseline.append(run_child(Path(tmp), fresh=True))
        for tokens, steps in shapes:
            data = journal_bytes(tokens, steps, finished=False)
            with tempfile.TemporaryDirectory() as tmp:
                write_journals(Path(tmp), ["run-00001"], data)
                label = f"resumed {tokens // 1000}K tokens, {steps} steps ({len(data) // 1024} KB)"
                results.setdefault(label, []).append(run_child(Path(tmp), fresh=False))
    report("baseline (new conversation)", baseline)
    for label, runs in results.items():
        report(label, runs)


if __name__ == "__main__":
    main()
