"""How long the CLI's light commands take as a user runs them, against a running `baton run`.

Run: .venv/bin/python bench/cli_start.py [--runs 11] [--together 8]

Starts a real `baton run` (default configuration, offline model: no API key) in a temporary
workspace that hosts a tiny greeter actor (`--actor greeter=bench_greeter:Greeter`, written
into the workspace) and holds a synthetic token log of a few hundred lines. Then runs each
light command as a subprocess of this venv's `baton`, in rounds (one of each per round, so
drift in the machine's load spreads over all of them), and prints the median wall time of
`--runs` rounds: `baton --help`, `baton tell`, `baton ask`, `baton status` and
`baton tail -n 5`, against three floors measured in the same rounds: `python -c pass`
(starting the interpreter), importing what `tell` and `ask` talk to the control socket with
(the standard library's `http.client` and the rest of their wire) and `python -c "import
httpx2"` (the async client's HTTP, which the other commands load). Last, `--together`
`baton ask` commands started at once, the wall time until the last exits, against one ask
(median of the rounds), beside the same ratio for `python -c pass` and for `import httpx2`:
a start is CPU work, so on 2 cores eight of them take about four times one however light
each is, and eight bare interpreters are the floor of that ratio. Goals on a 2-core machine:
`baton tell` in at most 0.15 s, eight asks at once in at most 1.5x the time of one.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _baton_process import BATON, baton_run
from report import synthetic_log

from baton.runtime.log_files import TOKEN_LOG

PYTHON = sys.executable
WIRE_IMPORTS = "import argparse, json, pathlib, socket, http.client, urllib.parse"
DEADLINE = 60.0  # seconds any one command, or the runtime's start, may take
GREETER = '''"""A greeter for bench/cli_start.py: answers `Hello` with a `Greeting`."""

from pydantic import BaseModel

from baton import Actor, handler


class Hello(BaseModel):
    name: str


class Greeting(BaseModel):
    text: str


class Greeter(Actor):
    @handler
    async def greet(self, msg: Hello) -> Greeting:
        return Greeting(text=f"hi {msg.name}")
'''


def commands(workspace: Path) -> dict[str, list[str]]:
    """The command lines measured, by label; the first three are the baselines."""
    ws = ["--workspace", str(workspace)]
    return {
        "python -c pass": [PYTHON, "-c", "pass"],
        "python stdlib wire": [PYTHON, "-c", WIRE_IMPORTS],
        "python -c 'import httpx2'": [PYTHON, "-c", "import httpx2"],
        "baton --help": [BATON, "--help"],
        "baton tell": [BATON, "tell", *ws, "greeter", "Hello", '{"name": "a"}'],
        "baton ask": [BATON, "ask", *ws, "greeter", "Hello", '{"name": "b"}'],
        "baton status": [BATON, "status", *ws],
        "baton tail -n 5": [BATON, "tail", *ws, "-n", "5"],
    }


def timed(argv: list[str]) -> float:
    """The wall time of one run of `argv` to its exit, which must be 0."""
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, timeout=DEADLINE, check=False)  # noqa: S603
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{argv[1:]} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed


def together(argv: list[str], count: int) -> float:
    """The wall time from starting `count` copies of `argv` at once until the last exits."""
    started = time.perf_counter()
    processes = [
        subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # noqa: S603
        for _ in range(count)
    ]
    for process in processes:
        _, err = process.communicate(timeout=DEADLINE)
        if process.returncode != 0:
            raise SystemExit(f"{argv[1:]} exited {process.returncode}: {err.decode()[-500:]}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11, help="rounds; medians are printed")
    parser.add_argument("--together", type=int, default=8, help="asks started at once")
    args = parser.parse_args()
    workspace = Path(tempfile.mkdtemp(prefix="baton-cli-start-"))
    try:
        (workspace / "bench_greeter.py").write_text(GREETER, encoding="utf-8")
        (workspace / TOKEN_LOG).parent.mkdir(parents=True)
        lines = synthetic_log(300, seed=0)
        (workspace / TOKEN_LOG).write_text("\n".join(lines) + "\n", encoding="utf-8")
        argvs = commands(workspace)
        times: dict[str, list[float]] = {label: [] for label in argvs}
        crowds: dict[str, list[float]] = {
            "baton ask": [],
            "python -c pass": [],
            "python -c 'import httpx2'": [],
        }
        with baton_run(workspace, "--actor", "greeter=bench_greeter:Greeter"):
            for argv in argvs.values():
                timed(argv)  # a first run of each, unmeasured: the disk cache is warm after it
            for _ in range(args.runs):
                for label, argv in argvs.items():
                    times[label].append(timed(argv))
                for label, runs in crowds.items():
                    runs.append(together(argvs[label], args.together))
        medians = {label: statistics.median(runs) for label, runs in times.items()}
        floor, http = medians["python -c pass"], medians["python -c 'import httpx2'"]
        print(f"{os.cpu_count()} cores, median of {args.runs} runs each")
        print(f"{'command':<28}{'wall':>10}{'x pass':>9}{'x httpx2':>10}")
        for label, median in medians.items():
            print(
                f"{label:<28}{median * 1e3:>7.0f} ms{median / floor:>8.1f}x{median / http:>9.2f}x"
            )
        for label, runs in crowds.items():
            one, crowd = medians[label], statistics.median(runs)
            print(
                f"{args.together} x {label} at once: {crowd * 1e3:.0f} ms, "
                f"{crowd / one:.2f}x one ({one * 1e3:.0f} ms)"
            )
        one, crowd = medians["baton ask"], statistics.median(crowds["baton ask"])
        floor_ratio = statistics.median(crowds["python -c pass"]) / medians["python -c pass"]
        tell = medians["baton tell"]
        print(f"goal `baton tell` <= 150 ms: {'met' if tell <= 0.150 else 'NOT met'}")
        print(
            f"goal {args.together} asks at once <= 1.5x one: "
            f"{'met' if crowd <= 1.5 * one else 'NOT met'} ({crowd / one:.2f}x; the floor, "
            f"{args.together} bare interpreter starts at once: {floor_ratio:.2f}x one)"
        )
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    main()
