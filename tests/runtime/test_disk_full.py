"""A full disk refuses new work with DiskFullFailure, keeps the process and every queued
message, and resumes by itself once there is room: mailbox, handler, token log, journal."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from structlog.testing import capture_logs

import baton
from baton import Actor, Runtime, handler
from baton.errors import DiskFullFailure
from baton.mailboxes.sqlite import SqliteStore
from baton.pipeline.messages import ScenarioQuery
from baton.runtime import SupervisorPolicy, token_log
from baton.runtime.runtime import sqlite_mailboxes
from baton.runtime.token_log import TokenLog
from baton.server import ControlServer
from tests.mailboxes.faults import FullDisk, Room


class Job(BaseModel):
    n: int


class Gated(Actor):
    """Handles jobs in order, the first only once `gate` is set."""

    def __init__(self, gate: anyio.Event, handled: list[int]) -> None:
        self.gate = gate
        self.handled = handled

    @handler
    async def job(self, msg: Job) -> None:
        await self.gate.wait()
        self.handled.append(msg.n)


class Scheduler(Actor):
    """Enough of a scheduler for `status`: no scenarios."""

    @handler
    async def query(self, msg: ScenarioQuery) -> list[Any]:
        return []


async def test_a_full_disk_refuses_new_work_keeps_the_queue_and_resumes(tmp_path: Path) -> None:
    """While the mailbox database cannot grow: `tell` (and the control API's) raise
    DiskFullFailure naming the file, `status` still answers, the message being handled waits
    to be acked; once there is room every queued message is handled, none dead-lettered."""
    room = Room()
    gate = anyio.Event()
    handled: list[int] = []
    async with (
        SqliteStore.open(tmp_path / "m.sqlite3", sleep=room) as store,
        Runtime.open(tmp_path, mailbox_factory=sqlite_mailboxes(store, 3)) as rt,
        ControlServer.open(rt),
    ):
        disk = FullDisk(store)
        await rt.spawn("scheduler", Scheduler)
        await rt.spawn("worker", Gated, gate, handled)
        for n in (1, 2, 3):
            await rt.tell("worker", Job(n=n))
        disk.on = True
        with pytest.raises(DiskFullFailure) as refused:
            await rt.tell("worker", Job(n=4))
        async with baton.connect(tmp_path) as client:
            status = await client.status()
            with pytest.raises(DiskFullFailure) as remote:
                await client.tell("worker", "Job", {"n": 4})
        gate.set()
        with anyio.fail_after(5):
            await room.waiting.wait()  # job 1 is done; its ack waits for room
        queued = await store.run(store.pending)
        disk.on = False
        room.back.set()
        await rt.tell("worker", Job(n=4))
        with anyio.fail_after(5):
            while len(handled) < 4:
                await anyio.wait_all_tasks_blocked()
        left = await store.run(store.pending)
        dead = rt.dead_letters.total
        alive = rt.is_alive("worker")
    assert str(tmp_path / "m.sqlite3") in str(refused.value)
    assert str(refused.value) == str(remote.value)
    assert "no space left to write" in (status.scenarios_error or "")
    assert (3, [1, 2, 3, 4], 0, 0, True) == (queued, handled, left, dead, alive)


class Writer(Actor):
    """Fails for space (`code`) `full` times (as a journal append would), then handles the
    job."""

    def __init__(self, full: list[int], handled: list[tuple[int, int]], code: int) -> None:
        self.full = full
        self.handled = handled
        self.code = code

    @handler
    async def job(self, msg: Job) -> str:
        if self.full[0] > 0:
            self.full[0] -= 1
            raise OSError(self.code, os.strerror(self.code), "journal.jsonl")
        assert self.actor_envelope is not None
        self.handled.append((msg.n, self.actor_envelope.attempt))
        return "done"


async def no_sleep(_: float) -> None:
    await anyio.lowlevel.checkpoint()


@pytest.mark.parametrize(
    ("code", "said"),
    [
        (errno.ENOSPC, "no space left to write journal.jsonl"),
        (errno.EDQUOT, "disk quota exceeded writing journal.jsonl"),
    ],
    ids=["ENOSPC", "EDQUOT"],
)
async def test_a_handler_that_finds_no_room_waits_without_spending_attempts(
    code: int, said: str
) -> None:
    """A handler failing for space (a full disk, or a used-up quota) 5 times, more than
    max_attempts, is retried, as the same attempt and without restarts, until it succeeds;
    an asker hears DiskFullFailure at once, in the words of what ran out."""
    full = [5]
    handled: list[tuple[int, int]] = []
    policy = SupervisorPolicy(max_attempts=3, max_restarts=1, sleep=no_sleep)
    async with Runtime.open(policy=policy) as rt:
        await rt.spawn("writer", Writer, full, handled, code)
        with pytest.raises(DiskFullFailure) as asked:
            await rt.ask("writer", Job(n=1), timeout=5)
        with anyio.fail_after(5):
            while not handled:
                await anyio.wait_all_tasks_blocked()
        (status,) = rt.status()
    assert str(asked.value).startswith(said)
    assert ([(1, 1)], 0, 0, "running", None) == (
        handled,
        status.restarts,
        status.failures,
        status.state,
        status.stop_reason,
    )
    assert 0 == rt.dead_letters.total


async def test_the_token_log_keeps_its_records_while_the_disk_is_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records emitted while appends fail for space are written, whole and in order, once
    there is room; the writer does not crash."""
    full = anyio.Event()
    room = [False]
    real = token_log.append_whole

    def append(fd: int, data: bytes, path: Path | str) -> None:
        if not room[0]:
            anyio.from_thread.run_sync(full.set)
            raise DiskFullFailure(path, "No space left on device")
        real(fd, data, path)

    monkeypatch.setattr(token_log, "append_whole", append)
    path = tmp_path / "tokens.jsonl"
    async with TokenLog.open(path) as log, log.follow() as written:
        for restarts in (1, 2, 3):
            log.emit("actor.restarted", actor="a", restarts=restarts, backoff_ms=0, reason="x")
        with anyio.fail_after(5):
            await full.wait()
        room[0] = True
        with anyio.fail_after(5):
            got = [(await written.receive())["restarts"] for _ in range(3)]
    lines = path.read_text().splitlines()
    assert ([1, 2, 3], [1, 2, 3]) == (got, [json.loads(line)["restarts"] for line in lines])


async def test_the_token_log_closes_on_a_full_disk_saying_what_it_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Leaving the token log while the disk stays full does not wait for room: it ends, and
    one `token_log.unwritten` line counts the records it could not write."""
    full = anyio.Event()

    def append(fd: int, data: bytes, path: Path | str) -> None:
        anyio.from_thread.run_sync(full.set)
        raise DiskFullFailure(path, "No space left on device")

    monkeypatch.setattr(token_log, "append_whole", append)
    with capture_logs() as logs:
        with anyio.fail_after(5):
            async with TokenLog.open(tmp_path / "tokens.jsonl") as log:
                for restarts in (1, 2):
                    log.emit(
                        "actor.restarted", actor="a", restarts=restarts, backoff_ms=0, reason="x"
                    )
                await full.wait()
    unwritten = [entry["records"] for entry in logs if entry["event"] == "token_log.unwritten"]
    assert [2] == unwritten


_FSIZE_SCRIPT = textwrap.dedent(
    """
    import anyio, json, resource, sys
    from pathlib import Path
    from baton.agents.journal import FileJournalStore
    from baton.errors import FileTooLargeFailure

    async def main(root: Path) -> None:
        journal = FileJournalStore(root)
        await journal.append("init", "c1", {"step": 1, "text": "a" * 100})
        size = journal.path("init", "c1").stat().st_size
        limit = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 50, limit[1]))
        try:
            await journal.append("init", "c1", {"step": 2, "text": "b" * 200})
            refused = None
        except FileTooLargeFailure as exc:
            refused = str(exc)
        after = journal.path("init", "c1").stat().st_size
        resource.setrlimit(resource.RLIMIT_FSIZE, limit)
        await journal.append("init", "c1", {"step": 2, "text": "b" * 200})
        steps = [record["step"] for record in await journal.read("init", "c1")]
        print(json.dumps({"refused": refused, "kept": after == size, "steps": steps}))

    anyio.run(main, Path(sys.argv[1]))
    """
)


def test_a_journal_append_past_the_file_size_limit_leaves_no_torn_line(tmp_path: Path) -> None:
    """Under RLIMIT_FSIZE (a file that may not grow: EFBIG, not a full disk), a journal
    append raises FileTooLargeFailure naming the journal and the limit, and leaves the file
    as it was; the same append once the limit is raised makes a journal that reads back
    whole."""
    result = subprocess.run(
        [sys.executable, "-c", _FSIZE_SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    outcome = json.loads(result.stdout)
    assert (True, [1, 2]) == (outcome["kept"], outcome["steps"])
    said = "c1.jsonl cannot grow (File too large): this process may write files of at most"
    assert said in outcome["refused"]
