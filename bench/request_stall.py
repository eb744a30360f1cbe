"""Loop stalls from hostile request bodies: how long a real `baton run` stops answering while
it takes bodies of 1 KB to 8 MB of the worst shapes for its checks and its parser.

Run: python bench/request_stall.py [--sizes 1024 65536 1048576 8388608] [--seeds 3]
Starts `baton run` (default configuration, offline model, nothing submitted) in a temporary
workspace, then, from this process: one thread asks `GET /health` back to back over the
control socket and records every answer's latency, while the main thread sends each body
(`POST /actors/scheduler/ask`, `POST /actors/scheduler/tell`, `POST /scenarios`) and waits
for its answer and a quarter of a second more (a told message is handled after its answer).
The figure is the longest `/health` latency seen while a size's bodies were in flight — the
longest the event loop, so every actor, was held — against the longest seen in the 3 s
before any body is sent (the baseline, same run). Goal: at
most 50 ms at 8 MB. Each seed varies the bodies' filler characters and key names.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2 as httpx
from _baton_process import baton_run

ROOT = Path(__file__).resolve().parent.parent
ROUTES = ("/actors/scheduler/ask", "/actors/scheduler/tell", "/scenarios")
HEADERS = {"content-type": "application/json"}
AFTERMATH = 0.25  # seconds after each answer that still count as the body's window


def _fill(size: int, unit: bytes) -> bytes:
    return unit * max(1, size // len(unit))


def shapes(size: int, rng: random.Random) -> dict[str, Callable[[str], bytes]]:
    """Bodies of about `size` bytes, per shape, for a route: each made to be expensive for
    some part of the way a body goes (the checks, the parser, the validation)."""
    letter = rng.choice(b"abcdefghij").to_bytes(1, "big")
    key = f"k{rng.randrange(1000)}_"

    def message(payload: bytes) -> Callable[[str], bytes]:
        def body(route: str) -> bytes:
            if route == "/scenarios":
                return b'{"scenario": "nope", "requirement": ' + payload + b"}"
            return (
                b'{"type": "StartScenario", "payload": {"scenario": "nope", "requirement": '
                + payload
                + b"}}"
            )

        return body

    keys = b",".join(f'"{key}{i}":0'.encode() for i in range(max(1, size // 12)))
    # Just under the limit on values (docs/architecture.md, "server/"), the rest of the size a
    # long string: the costliest body the checks let through to the parser.
    limit = 49_900
    size -= 256  # the envelope around the payload: the whole body stays within the limit

    def padded(values: bytes) -> bytes:
        return b'{"v": ' + values + b', "pad": "' + _fill(size - len(values), letter) + b'"}'

    at_limit = {
        "numbers at the value limit": b"[" + b"0," * (limit - 1) + b"0]",
        "empty arrays at the value limit": b"[" + b"[]," * (limit // 2 - 1) + b"[]]",
        "keys at the value limit": b"{"
        + b",".join(f'"{key}{i}":0'.encode() for i in range(limit // 2 - 2))
        + b"}",
    }
    return {
        **{shape: message(padded(values)) for shape, values in at_limit.items()},
        "unclosed escaped quotes": message(b'"' + _fill(size, b'\\"')),
        "deep brackets": message(_fill(size // 2, b"[") + _fill(size // 2, b"]")),
        "empty arrays": message(b"[" + _fill(size, b"[],")[:-1] + b"]"),
        "small numbers": message(b"[" + _fill(size, b"0,")[:-1] + b"]"),
        "short strings": message(b"[" + _fill(size, b'"' + letter + b'",')[:-1] + b"]"),
        "many keys": message(b"{" + keys + b"}"),
        "one long string": message(b'"' + _fill(size, letter) + b'"'),
        "escaped unicode": message(b'"' + _fill(size, b"\\u00e9") + b'"'),
        "backslashes": message(b'"' + _fill(size, b"\\\\") + b'"'),
    }


PROBE = """
import select, sys, time
import httpx2
transport = httpx2.HTTPTransport(uds=sys.argv[1])
client = httpx2.Client(transport=transport, base_url="http://baton", timeout=60)
with open(sys.argv[2], "w") as out:
    print("ready", flush=True)
    while not select.select([sys.stdin], [], [], 0)[0]:  # until the parent writes "stop"
        started = time.monotonic()
        client.get("/health").raise_for_status()
        out.write(f"{started} {time.monotonic()}\\n")
"""


class Prober:
    """`GET /health` back to back from a process of its own (so this one's work on the
    bodies it sends cannot delay a probe), each answer's start and end kept."""

    def __init__(self, socket: Path, out: Path) -> None:
        self.socket = socket
        self.out = out

    @contextmanager
    def running(self) -> Iterator[Prober]:
        process = subprocess.Popen(  # noqa: S603 - this interpreter, on a script of ours
            [sys.executable, "-c", PROBE, str(self.socket), str(self.out)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert process.stdout is not None
        assert process.stdin is not None
        process.stdout.readline()  # "ready"
        try:
            yield self
        finally:
            process.stdin.write(b"stop\n")
            process.stdin.close()
            process.wait(timeout=60)

    def probes(self) -> list[tuple[float, float]]:
        """Every probe's (start, end), in `time.monotonic()` of this machine."""
        rows = self.out.read_text().split()
        return [(float(a), float(b)) for a, b in zip(rows[0::2], rows[1::2], strict=True)]


def longest(probes: list[tuple[float, float]], start: float, end: float) -> float:
    """The longest probe that overlapped the window [start, end] (0 when none did)."""
    return max((b - a for a, b in probes if a < end and b > start), default=0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 65536, 1 << 20, 8 << 20])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="baton-stall-"))
    try:
        shutil.copytree(ROOT / "scenarios", root / "scenarios")
        windows: list[tuple[int, str, str, int, float, float]] = []
        with baton_run(root) as socket:
            prober = Prober(socket, root / "probes.txt")
            with prober.running():
                idle = (time.monotonic(), time.monotonic() + 3)
                while time.monotonic() < idle[1]:
                    time.sleep(0.1)  # the baseline: probes alone for 3 s
                with httpx.Client(
                    transport=httpx.HTTPTransport(uds=str(socket)),
                    base_url="http://baton",
                    timeout=120,
                ) as sender:
                    for seed in range(args.seeds):
                        rng = random.Random(seed)  # noqa: S311 - reproducible bodies
                        for size in args.sizes:
                            for shape, make in shapes(size, rng).items():
                                for route in ROUTES:
                                    body = make(route)
                                    if len(body) > 2 * size:
                                        continue  # a shape that needs more room than this size
                                    started = time.monotonic()
                                    answer = sender.post(route, content=body, headers=HEADERS)
                                    # What a body costs after its answer counts too (a told
                                    # message is handled, perhaps dead-lettered, later).
                                    time.sleep(AFTERMATH)
                                    ended = time.monotonic()
                                    windows.append(
                                        (size, shape, route, answer.status_code, started, ended)
                                    )
            probes = prober.probes()
        baseline = longest(probes, *idle)
        idle_probes = [b - a for a, b in probes if a >= idle[0] and b <= idle[1]]
        print(
            f"/health while idle: {len(idle_probes)} probes, median "
            f"{statistics.median(idle_probes) * 1e3:.2f} ms, longest {baseline * 1e3:.1f} ms "
            "(the baseline)"
        )
        print(f"{'body size':>10}  {'longest stall':>14}  {'x baseline':>10}  worst shape")
        worst = 0.0
        for size in args.sizes:
            rows = [
                (longest(probes, start, end), shape, route, status)
                for s, shape, route, status, start, end in windows
                if s == size
            ]
            stall, shape, route, status = max(rows)
            worst = max(worst, stall)
            print(
                f"{size:>10,}  {stall * 1e3:>11.1f} ms  {stall / baseline:>9.1f}x  "
                f"{shape} to {route} (answered {status})"
            )
        goal = "met" if worst <= 0.050 else "NOT met"
        print(f"goal (longest stall <= 50 ms at every size): {goal}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
