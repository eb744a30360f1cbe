"""A real `baton run` for the benchmarks that measure it from outside, as a user runs it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx2

BATON = str(Path(sys.executable).parent / "baton")


@contextmanager
def baton_run(
    workspace: Path, *extra: str, deadline: float = 60.0, env: Mapping[str, str] | None = None
) -> Iterator[Path]:
    """`baton run` in `workspace` with `extra` arguments (no API key: the offline model, the
    workspace as its working directory; `env` is set over the inherited variables, a key
    included), until the block ends; yields its control socket once `/health` answers."""
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"} | dict(env or {})
    process = subprocess.Popen(  # noqa: S603 - runs this venv's own `baton`
        [BATON, "run", "--workspace", str(workspace), "--log-format", "json", *extra],
        cwd=workspace,  # where `--actor` imports its module from
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    socket = workspace / ".baton" / "control.sock"
    try:
        give_up = time.monotonic() + deadline
        while True:
            if process.poll() is not None:
                raise SystemExit(f"baton run exited with {process.returncode} at start")
            if socket.exists():
                try:
                    transport = httpx2.HTTPTransport(uds=str(socket))
                    with httpx2.Client(transport=transport) as client:
                        if client.get("http://baton/health", timeout=2).status_code == 200:
                            break
                except httpx2.TransportError:
                    pass
            if time.monotonic() > give_up:
                raise SystemExit(f"baton run did not answer /health within {deadline:.0f} s")
            time.sleep(0.05)  # polling the process's start, with a deadline
        yield socket
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            process.kill()
