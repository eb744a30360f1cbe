"""`baton run` under faults from outside: fd exhaustion, a mailbox database lost after kill -9."""

from __future__ import annotations

import json
import queue
import resource
import shutil
import signal
import socket
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import anyio

import baton
from baton.mailboxes.sqlite import DATABASE
from tests.e2e.test_process import BATON, DEADLINE, Child, cli, env

FD_LIMIT = 48  # an idle `baton run` holds about 14


class Stderr:
    """A process's stderr read line by line by a thread, so a wait has a real deadline."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._proc = proc
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, text: str) -> str:
        """The first line containing `text`, failing the test if none comes in time."""
        while True:
            try:
                line = self._queue.get(timeout=DEADLINE)
            except queue.Empty:
                raise AssertionError(f"no stderr line with {text!r} in time") from None
            assert line is not None, f"the process exited before saying {text!r}"
            self.lines.append(line)
            if text in line:
                return line

    def rest(self) -> list[str]:
        """Every line up to the end of the stream (the process has exited)."""
        self._thread.join(DEADLINE)
        assert self._proc.stderr is not None
        self._proc.stderr.close()
        while (line := self._queue.get_nowait()) is not None:
            self.lines.append(line)
        return self.lines


def _limit_fds() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


def test_fd_exhaustion_logs_one_line_not_a_traceback_per_connection(tmp_path: Path) -> None:
    """With its descriptors used up by idle connections, `baton run` logs the accept failure
    once, without a traceback, and serves again once the connections close."""
    proc = subprocess.Popen(
        [BATON, "run", "--log-format", "json", "--workspace", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
        preexec_fn=_limit_fds,  # noqa: PLW1509 - only setrlimit, in the child before exec
    )
    stderr = Stderr(proc)
    try:
        stderr.wait_for("control.listening")
        idle = []
        for _ in range(2 * FD_LIMIT):
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect(str(tmp_path / ".baton" / "control.sock"))
            idle.append(conn)
        reported = json.loads(stderr.wait_for("loop.error"))
        for conn in idle:
            conn.close()
        status = cli(tmp_path, "status")
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=DEADLINE)
    lines = stderr.rest()
    assert (0, 0) == (status.returncode, code), status.stderr
    assert "OSError: [Errno 24] Too many open files" == reported["error"]
    assert (1, 0) == (
        sum("loop.error" in line for line in lines),
        sum("Traceback" in line for line in lines),
    )


QUEUED = 21


async def queue_jobs(workspace: Path) -> None:
    async with baton.connect(workspace) as client:
        for n in range(QUEUED):
            await client.tell("stuck", "Job", {"n": n})


def kill_with_queued_jobs(workspace: Path) -> None:
    """A clean first run (the database is checkpointed), then one killed with 21 jobs
    stored and unhandled."""
    assert 0 == cli(workspace, "run", "--exit-when-idle").returncode
    child = Child(
        [BATON, "run", "--workspace", str(workspace), "--actor", "stuck=fault_actors:Stuck"],
        stderr=subprocess.DEVNULL,
    )
    try:
        child.read_line()  # the banner: the control socket is ready
        anyio.run(queue_jobs, workspace)
    finally:
        child.stop(signal.SIGKILL)


def delete_all(db: Path) -> None:
    for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        path.unlink()


def delete_wal(db: Path) -> None:
    Path(f"{db}-wal").unlink()


def garbage_wal(db: Path) -> None:
    wal = Path(f"{db}-wal")
    wal.write_bytes(bytes(range(256)) * (wal.stat().st_size // 256 + 1))


def empty_database(db: Path) -> None:
    db.write_bytes(b"")
    Path(f"{db}-wal").unlink()


def test_messages_lost_with_the_database_after_kill_9_are_reported(tmp_path: Path) -> None:
    """After kill -9 with 21 jobs queued, a deleted, emptied or garbage database or -wal makes
    the next `baton run` say that 21 queued messages are lost (a `baton: warning:` line and a
    `mailbox.lost` log line); a garbage database stops it with one line saying to move it
    aside, which done, the same warning follows."""
    killed = tmp_path / "killed"
    killed.mkdir()
    kill_with_queued_jobs(killed)
    outcomes: dict[str, tuple[int, list[str], list[int]]] = {}

    def restart(name: str, damage: Callable[[Path], None]) -> subprocess.CompletedProcess[str]:
        workspace = tmp_path / name
        ignore = shutil.ignore_patterns("control.sock", "baton.pid")
        shutil.copytree(killed / ".baton", workspace / ".baton", ignore=ignore)
        damage(workspace / DATABASE)
        return cli(workspace, "run", "--exit-when-idle", "--log-format", "json")

    def outcome(result: subprocess.CompletedProcess[str]) -> tuple[int, list[str], list[int]]:
        lines = result.stderr.splitlines()
        warnings = [line for line in lines if line.startswith("baton: warning: the mailbox")]
        lost = [json.loads(line)["missing"] for line in lines if '"mailbox.lost"' in line]
        return result.returncode, warnings, lost

    undamaged = outcome(restart("undamaged", lambda _: None))
    for damage in (delete_all, delete_wal, garbage_wal, empty_database):
        outcomes[damage.__name__] = outcome(restart(damage.__name__, damage))
    garbage = restart("garbage_database", lambda db: db.write_bytes(b"garbage\n" * 1000))
    advice = garbage.stderr.strip().splitlines()[-1]
    command = advice.split("move it aside (")[1].split(")")[0]
    subprocess.run(command, shell=True, check=True, cwd=tmp_path)  # noqa: S602 - baton's advice
    moved = outcome(
        cli(tmp_path / "garbage_database", "run", "--exit-when-idle", "--log-format", "json")
    )
    for name, (code, warnings, lost) in {**outcomes, "garbage_database": moved}.items():
        assert (0, 1, [QUEUED]) == (code, len(warnings), lost), name
        assert f"{QUEUED} queued message(s) are lost" in warnings[0], name
    assert (0, [], []) == undamaged
    assert (1, False) == (garbage.returncode, "Traceback" in garbage.stderr)
    assert advice.startswith(f"baton run: error: {tmp_path / 'garbage_database' / DATABASE} ")
