"""A real `redis-server` on a free loopback port, for the Redis mailbox tests and benchmark.

`running_redis()` starts one, waits until it answers PING and stops it by its pid on exit.
`running_redis_cluster()` starts three `--cluster-enabled yes` servers, gives each a third of
the hash slots and introduces them to each other, and returns once every node reports
`cluster_state:ok`. It imports nothing from baton or pytest, so `bench/redis_mailbox.py` can
load it by path.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

EXECUTABLE = "/usr/bin/redis-server"
START_TIMEOUT = 10.0
STOP_TIMEOUT = 5.0
# Between two PING attempts we wait on the process itself: a server that dies at start (its
# port was taken after we picked it) is noticed at once instead of at the deadline.
POLL_INTERVAL = 0.02
CLUSTER_SLOTS = 16384
CLUSTER_TIMEOUT = 20.0


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


def command(port: int, *args: str) -> bytes:
    """One command's reply as raw RESP (a status line, an error, or a bulk string whole)."""
    request = f"*{len(args)}\r\n" + "".join(f"${len(a.encode())}\r\n{a}\r\n" for a in args)
    with socket.create_connection(("127.0.0.1", port), timeout=2.0) as sock:
        sock.sendall(request.encode())
        reply = b""
        while b"\r\n" not in reply or (reply.startswith(b"$") and not _whole_bulk(reply)):
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
        return reply


def _whole_bulk(reply: bytes) -> bool:
    header, _, rest = reply.partition(b"\r\n")
    return int(header[1:]) < 0 or len(rest) >= int(header[1:]) + 2


class RedisServer:
    """One redis-server process on 127.0.0.1; `url` is what clients connect to. A cluster
    node also listens on `bus_port`, the cluster bus (its own free port, not port + 10000)."""

    def __init__(
        self, executable: str, directory: Path, *, aof: bool, cluster: bool = False
    ) -> None:
        self.executable = executable
        self.directory = directory
        self.aof = aof
        self.cluster = cluster
        self.port = 0
        self.bus_port = 0
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
        if self.cluster:
            args += ["--cluster-enabled", "yes", "--cluster-port", str(self.bus_port)]
            args += ["--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"]
        return [*args, "--dir", str(self.directory), "--logfile", "redis.log"]

    def start(self, *, port: int | None = None) -> None:
        """Start on `port` (a fresh free one by default) and return once it answers PING."""
        attempts = 1 if port is not None else 3
        for attempt in range(attempts):
            self.port = port if port is not None else free_port()
            self.bus_port = free_port() if self.cluster else 0
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
            if self.exits_within(POLL_INTERVAL):
                return False  # it exited: most likely the port was taken meanwhile
        return False

    def exits_within(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds on the process: whether it has exited (or never ran)."""
        if self._process is None:
            return True
        try:
            self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

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


class RedisClusterServers:
    """Three primaries (no replicas) holding a third of the hash slots each; `url` names one
    node, from which a cluster client discovers the others."""

    def __init__(self, nodes: list[RedisServer]) -> None:
        self.nodes = nodes
        # The first and last slot each node holds, in the order of `nodes`.
        share = CLUSTER_SLOTS // len(nodes)
        self.slots = [
            (i * share, CLUSTER_SLOTS - 1 if i == len(nodes) - 1 else (i + 1) * share - 1)
            for i in range(len(nodes))
        ]

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def create(self) -> None:
        """Give each node its share of the slots, introduce them, and wait for the cluster."""
        for node, (first_slot, last_slot) in zip(self.nodes, self.slots, strict=True):
            _expect_ok(node.port, "CLUSTER", "ADDSLOTSRANGE", str(first_slot), str(last_slot))
        first = self.nodes[0]
        for node in self.nodes[1:]:
            _expect_ok(
                first.port, "CLUSTER", "MEET", "127.0.0.1", str(node.port), str(node.bus_port)
            )
        deadline = time.monotonic() + CLUSTER_TIMEOUT
        waiting = list(self.nodes)
        while waiting:
            if b"cluster_state:ok" in command(waiting[0].port, "CLUSTER", "INFO"):
                waiting.pop(0)
                continue
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the cluster is not ok after {CLUSTER_TIMEOUT}s: {waiting[0].port}"
                )
            # Gossip takes its time: wait on the node's process, noticing at once if it died.
            if waiting[0].exits_within(POLL_INTERVAL):
                raise RuntimeError(
                    f"redis-server on {waiting[0].port} exited as the cluster formed"
                )

    def flush(self) -> None:
        """Empty every node (each holds only its own slots' keys)."""
        for node in self.nodes:
            _expect_ok(node.port, "FLUSHALL")


def _expect_ok(port: int, *args: str) -> None:
    reply = command(port, *args)
    if not reply.startswith(b"+OK"):
        raise RuntimeError(f"{' '.join(args)} on {port}: {reply!r}")


@contextmanager
def running_redis_cluster(
    nodes: int = 3, *, executable: str | None = None
) -> Iterator[RedisClusterServers]:
    """A formed cluster of `nodes` started redis-servers, all stopped when the block ends."""
    binary = executable or find_executable()
    if binary is None:
        raise FileNotFoundError("redis-server is not installed (looked for /usr/bin and PATH)")
    with ExitStack() as stack:
        servers: list[RedisServer] = []
        for _ in range(nodes):
            directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="baton-redis-"))
            server = RedisServer(binary, Path(directory), aof=False, cluster=True)
            stack.callback(server.stop)
            server.start()
            servers.append(server)
        cluster = RedisClusterServers(servers)
        cluster.create()
        yield cluster
