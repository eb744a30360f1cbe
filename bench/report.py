"""`baton report` on a synthetic token log: page size and time to write it.

Run: .venv/bin/python bench/report.py [--lines N] [--seed S]

Writes a deterministic token log of N lines (default 100,000) into a temporary workspace,
rotated as the writer does (`tokens.jsonl.2`, `.1`, then `tokens.jsonl`; docs/token-log.md,
"File and rotation"): three agents and the Scheduler over several scenarios and runs, with
compactions whenever a context passes its threshold, handoffs and approvals, on three
models (one of them without a known price). Then runs the real `baton report` command, for
the whole log and for one scenario, and prints each page's size and wall time, against
the floor of reading the files and parsing every line as JSON.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from baton.runtime.token_log import TOKEN_LOG

BATON = str(Path(sys.executable).parent / "baton")
AGENTS = {
    # actor: (model, window, threshold)
    "init": ("claude-opus-5-5", 200_000, 80_000),
    "execute": ("claude-sonnet-5-5", 200_000, 120_000),
    "scheduler": ("claude-haiku-5-5", 200_000, 150_000),
}
SCENARIOS = ("leave_application", "expense_claim", "travel_request")
FILES = 3  # the log is split into this many files: two rotated ones and the current


def _record(ts: float, actor: str, scenario: str | None, run: str | None, **fields: Any) -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{int(ts % 1 * 1e6):06d}Z"
    head = {"ts": stamp, "actor": actor, "scenario": scenario, "conversation": run}
    return json.dumps({**head, **fields}, ensure_ascii=False)


def synthetic_log(lines: int, seed: int) -> list[str]:
    """`lines` token-log lines of several scenario runs, in time order."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible synthetic log, not a secret
    out: list[str] = []
    ts = 1_795_000_000.0
    context = dict.fromkeys(AGENTS, 4_000)
    turn = dict.fromkeys(AGENTS, 0)
    run_number = dict.fromkeys(SCENARIOS, 0)
    while len(out) < lines:
        scenario = rng.choice(SCENARIOS)
        run_number[scenario] += 1
        run = scenario if run_number[scenario] == 1 else f"{scenario}@{run_number[scenario]}"
        ts += 1
        # The Scheduler's brief of the run, on a model without a known price (cost "—").
        out.append(
            _record(
                ts,
                "scheduler",
                scenario,
                run,
                event="model.call",
                model=AGENTS["scheduler"][0],
                input_tokens=rng.randint(400, 900),
                cache_creation_input_tokens=0,
                cache_read_input_tokens=0,
                output_tokens=rng.randint(50, 300),
                context_tokens=1_000,
                context_window=AGENTS["scheduler"][1],
                compact_threshold=AGENTS["scheduler"][2],
                fill=0.005,
                latency_ms=rng.uniform(300, 2_000),
                stop_reason="end_turn",
                tools=[],
                turn=0,
                purpose="task_summary",
                thinking="off",
                effort=None,
            )
        )
        for actor in ("init", "execute", "init", "execute"):
            model, window, threshold = AGENTS[actor]
            for _ in range(rng.randint(20, 200)):
                ts += rng.uniform(0.5, 20)
                read = context[actor]
                write = rng.randint(500, 12_000)
                output = rng.randint(50, 4_000)
                context[actor] = min(read + write + output + 3, window)
                turn[actor] += 1
                out.append(
                    _record(
                        ts,
                        actor,
                        scenario,
                        run,
                        event="model.call",
                        model=model,
                        input_tokens=3,
                        cache_creation_input_tokens=write,
                        cache_read_input_tokens=read,
                        output_tokens=output,
                        context_tokens=context[actor],
                        context_window=window,
                        compact_threshold=threshold,
                        fill=round(context[actor] / window, 6),
                        latency_ms=rng.uniform(300, 9_000),
                        stop_reason="tool_use",
                        tools=["Write"],
                        turn=turn[actor],
                        purpose="turn",
                        thinking="adaptive",
                        effort=None,
                    )
                )
                if context[actor] >= threshold:
                    after = rng.randint(threshold // 5, threshold // 2)
                    out.append(
                        _record(
                            ts + 0.1,
                            actor,
                            scenario,
                            run,
                            event="context.compacted",
                            tokens_before=context[actor],
                            tokens_after=after,
                            kept_steps=rng.randint(2, 6),
                            summary_tokens=rng.randint(1_000, 4_000),
                            mode="llm",
                            latency_ms=rng.uniform(2_000, 20_000),
                            ledger_dropped=0,
                        )
                    )
                    context[actor] = after
            handoff = "init_to_execute" if actor == "init" else "execute_to_init"
            target = "execute" if actor == "init" else "init"
            package = rng.randint(300, 3_000)
            for sender, receiver, name in (
                (actor, "scheduler", scenario),
                ("scheduler", target, None),
            ):
                ts += 0.2
                out.append(
                    _record(
                        ts,
                        sender,
                        name,
                        run if name else None,
                        event="handoff.sent",
                        handoff_type=handoff,
                        package_tokens=package,
                        to=receiver,
                        **{"from": sender},
                    )
                )
        ts += rng.uniform(60, 600)
    return out[:lines]


def write_workspace(root: Path, lines: list[str]) -> Path:
    """The lines as a workspace's token log in `FILES` files, oldest in `tokens.jsonl.N`."""
    log = root / TOKEN_LOG
    log.parent.mkdir(parents=True)
    size = -(-len(lines) // FILES)
    for index in range(FILES):
        chunk = lines[index * size : (index + 1) * size]
        number = FILES - 1 - index
        path = log if number == 0 else log.with_name(f"{log.name}.{number}")
        path.write_text("".join(line + "\n" for line in chunk), encoding="utf-8")
    return root


def timed_report(workspace: Path, *args: str) -> tuple[float, Path]:
    """Wall time of one `baton report` run, and the page it wrote."""
    started = time.perf_counter()
    result = subprocess.run(  # noqa: S603 - runs this venv's own `baton`
        [BATON, "report", "--workspace", str(workspace), *args],
        capture_output=True,
        text=True,
        check=True,
    )
    elapsed = time.perf_counter() - started
    return elapsed, Path(result.stdout.strip())


CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium_render(page: Path, scratch: Path) -> float | None:
    """Wall time for headless Chromium to load, lay out and screenshot the page (browser
    start included); None without /usr/bin/chromium."""
    if not Path("/usr/bin/chromium").exists():
        return None
    started = time.perf_counter()
    subprocess.run(  # noqa: S603 - Debian's chromium on a local file
        [
            "/usr/bin/chromium",
            *CHROMIUM_FLAGS,
            f"--user-data-dir={scratch / 'chromium'}",
            "--window-size=1400,1000",
            f"--screenshot={scratch / 'page.png'}",
            page.as_uri(),
        ],
        capture_output=True,
        check=True,
        timeout=120,
    )
    return time.perf_counter() - started


def parse_floor(workspace: Path) -> float:
    """Wall time to read every file of the log and parse each line (no report at all)."""
    started = time.perf_counter()
    for path in sorted((workspace / TOKEN_LOG).parent.glob("tokens.jsonl*")):
        for raw in path.read_bytes().split(b"\n"):
            if raw:
                json.loads(raw)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lines = synthetic_log(args.lines, args.seed)
        workspace = write_workspace(Path(tmp), lines)
        log_bytes = sum(p.stat().st_size for p in (workspace / TOKEN_LOG).parent.iterdir())
        print(f"token log: {len(lines):,} lines in {FILES} files, {log_bytes / 2**20:.1f} MiB")
        floor = parse_floor(workspace)
        print(f"floor (read + json.loads every line): {floor:.2f} s")
        for label, extra in (("whole log", ()), (SCENARIOS[0], ("--scenario", SCENARIOS[0]))):
            elapsed, page = timed_report(workspace, *extra)
            size = page.stat().st_size
            print(
                f"baton report ({label}): {elapsed:.2f} s ({elapsed / floor:.1f}x the floor), "
                f"page {size / 1024:.0f} KiB"
            )
            shown = chromium_render(page, Path(tmp))
            if shown is not None:
                print(f"  headless Chromium: loaded, laid out and screenshot in {shown:.2f} s")


if __name__ == "__main__":
    main()
