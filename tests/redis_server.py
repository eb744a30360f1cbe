"""A real `redis-server` on a free loopback port, for the Redis mailbox tests and benchmark.

`running_redis()` starts one, waits until it answers PING and stops it by its pid on exit.
It imports nothing from baton or pytest, so `bench/redis_mailbox.py` can load it by path.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

EXECUTABLE = "/usr/bin/redis-server"
START_TIMEOUT = 10.0
STOP_TIMEOUT = 5.0
# Between two PING attempts we wait on the process itself: a server that dies at start (its
# port was taken after we picked it) is noticed at once instead of at the deadline.
POLL_INTERVAL = 0.02


def find_executable() -> str | None:
    """The redis-server to run: the system one, else whichever is on PATH."""
    return EXECUTABLE if Path(EXECUTABLE).exists() else shutil.which("redis-server")


def free_port() -> int:
    """A loopback port nobody listens on right now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def answers_ping(port: int) -> bool:
    """Whether a server on `port` replies +PONG to an inline PING."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One redis-server process on 127.0.0.1; `url` is what clients connect to."""

    def __init__(self, executable: str, directory: Path, *, aof: bool) -> None:
        self.executable = executable
        self.directory = directory
        self.aof = aof
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def argv(self) -> list[str]:
        args = [self.executable, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        if self.aof:
            # fsync on every write: a test that restarts the server must find every entry.
            args += ["--appendonly", "yes", "--appendfsync", "always"]
        else:
            args += ["--appendonly", "no"]
        return [*args, "--dir", str(self.directory), "--logfile", "redis.log"]

    def start(self, *, port: int | None = None) -> None:
        """Start on `port` (a fresh free one by default) and return once it answers PING."""
        attempts = 1 if port is not None else 3
        for attempt in range(attempts):
            self.port = port if port is not None else free_port()
            self._process = subprocess.Popen(
                self.argv(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            if self._wait_until_ready():
                return
            self.stop()
            if attempt + 1 == attempts:
                log = self.directory / "redis.log"
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise RuntimeError(f"redis-server did not answer PING on {self.port}:\n{tail}")

    def _wait_until_ready(self) -> bool:
        assert self._process is not None
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if answers_ping(self.port):
                return True
            try:
                self._process.wait(timeout=POLL_INTERVAL)
            except subprocess.TimeoutExpired:
                continue
            return False  # it exited: most likely the port was taken meanwhile
        return False

    def stop(self) -> None:
        """Stop the process by its pid: SIGTERM, then SIGKILL if it does not exit in time."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=STOP_TIMEOUT)

    def restart(self) -> None:
        """Stop and start again on the same port and directory (what AOF must survive)."""
        port = self.port
        self.stop()
        self.start(port=port)


@contextmanager
def running_redis(*, aof: bool = False, executable: str | None = None) -> Iterator[RedisServer]:
    """A started redis-server, stopped (and its directory removed) when the block ends."""
    binary = executable or find_executable()
    if binary is None:
        raise FileNotFoundError("redis-server is not installed (looked for /usr/bin and PATH)")
    with tempfile.TemporaryDirectory(prefix="baton-redis-") as directory:
        server = RedisServer(binary, Path(directory), aof=aof)
        server.start()
        try:
            yield server
        finally:
            server.stop()
