"""Group commit: concurrent operations share a transaction, each still committed before its
caller goes on, and one failing operation undoes only itself."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from pathlib import Path
from typing import Any

import anyio
from anyio import wait_all_tasks_blocked
from pydantic import BaseModel

from baton.mailboxes import Envelope
from baton.mailboxes._group_commit import GroupCommit
from baton.mailboxes.codec import EnvelopeCodec
from baton.mailboxes.sqlite import LARGE_BODY, SqliteMailbox, SqliteStore


class Ping(BaseModel):
    n: int


CODEC = EnvelopeCodec({"Ping": Ping})


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS t (n INTEGER PRIMARY KEY)")
    db.execute("PRAGMA busy_timeout = 0")  # as GroupCommit requires: never wait on the loop
    return db


def _stored(path: Path) -> set[int]:
    """What another connection (another process) sees committed."""
    other = sqlite3.connect(path)
    try:
        return {row[0] for row in other.execute("SELECT n FROM t")}
    finally:
        other.close()


async def test_concurrent_sends_share_transactions_and_each_is_committed_on_return(
    tmp_path: Path,
) -> None:
    """16 senders at once take fewer transactions than messages, and every send has its
    envelope committed (seen by another connection) by the time it returns."""
    path = tmp_path / "m.sqlite3"
    unseen: list[int] = []

    async def send(n: int) -> None:
        envelope = Envelope("box", Ping(n=n))
        await box.send(envelope)
        other = sqlite3.connect(path)
        try:
            row = other.execute("SELECT 1 FROM envelopes WHERE id = ?", (envelope.id,))
            if row.fetchone() is None:
                unseen.append(n)
        finally:
            other.close()

    async with SqliteStore.open(path) as store:
        box = SqliteMailbox("box", store, CODEC, capacity=64)
        before = store.batches
        async with anyio.create_task_group() as group:
            for n in range(16):
                group.start_soon(send, n)
        assert [] == unseen
        assert store.batches - before < 16
        received = [(await box.receive()).envelope.payload for _ in range(16)]
        assert list(range(16)) == sorted(m.n for m in received if isinstance(m, Ping))


async def test_a_failing_operation_undoes_only_itself(tmp_path: Path) -> None:
    """In one batch, an operation that raises gets its error; the others are committed."""
    path = tmp_path / "g.sqlite3"
    db = _connect(path)
    group = GroupCommit(db)
    outcomes: dict[int, object] = {}

    def insert(n: int) -> int:
        db.execute("INSERT INTO t (n) VALUES (?)", (n,))
        if n == 2:
            raise ValueError("the second statement of this operation failed")
        return n

    async def run(n: int) -> None:
        try:
            outcomes[n] = await group.run(insert, n)
        except ValueError as exc:
            outcomes[n] = str(exc)

    async with anyio.create_task_group() as tasks:
        for n in range(1, 5):
            tasks.start_soon(run, n)
    assert {
        1: 1,
        2: "the second statement of this operation failed",
        3: 3,
        4: 4,
    } == outcomes
    assert {1, 3, 4} == _stored(path)
    db.close()


async def test_work_after_commit_runs_only_for_committed_operations(tmp_path: Path) -> None:
    """`on_commit` actions of a failed operation are dropped; the batch hook runs once."""
    db = _connect(tmp_path / "h.sqlite3")
    batches: list[int] = []
    committed: list[int] = []
    group = GroupCommit(db, after_commit=lambda: batches.append(len(committed)))

    def insert(n: int) -> None:
        group.on_commit(lambda: committed.append(n))
        db.execute("INSERT INTO t (n) VALUES (?)", (n,))  # n = 7 twice: a constraint error

    async def run(n: int) -> None:
        with contextlib.suppress(sqlite3.IntegrityError):
            await group.run(insert, n)

    await group.run(insert, 7)
    async with anyio.create_task_group() as tasks:
        for n in (7, 8, 9):
            tasks.start_soon(run, n)
    assert [7, 8, 9] == sorted(committed)
    assert 3 == batches[-1]
    db.close()


async def test_a_call_cancelled_before_its_batch_never_runs(tmp_path: Path) -> None:
    """An operation still queued when its caller is cancelled is taken out of the queue."""
    path = tmp_path / "c.sqlite3"
    db = _connect(path)
    group = GroupCommit(db)
    holder = _locked_by_another_connection(path)

    def insert(n: int) -> None:
        db.execute("INSERT INTO t (n) VALUES (?)", (n,))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(group.run, insert, 1)  # finds the lock taken: waits on the thread
        await wait_all_tasks_blocked()
        with anyio.CancelScope() as scope:
            tasks.start_soon(_cancel_when_blocked, scope)
            await group.run(insert, 2)
        assert scope.cancelled_caught
        holder.execute("ROLLBACK")
    await group.run(insert, 3)
    assert ({1, 3}, 1) == (_stored(path), group.waited)
    holder.close()
    db.close()


async def test_a_locked_database_is_waited_for_off_the_event_loop(tmp_path: Path) -> None:
    """While another connection holds the write lock, a batch waits on the worker thread:
    the event loop goes on (another task runs to completion meanwhile), and the batch is
    committed once the lock is released."""
    path = tmp_path / "l.sqlite3"
    db = _connect(path)
    group = GroupCommit(db)
    holder = _locked_by_another_connection(path)
    loop_ran = anyio.Event()

    def insert(n: int) -> int:
        db.execute("INSERT INTO t (n) VALUES (?)", (n,))
        return n

    async def release_after_the_loop_ran() -> None:
        await wait_all_tasks_blocked()  # the batch is on the thread, the loop is free
        loop_ran.set()
        holder.execute("ROLLBACK")

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(release_after_the_loop_ran)
        with anyio.fail_after(4):  # within the busy timeout
            committed = await group.run(insert, 7)
    assert (7, True, {7}, 1) == (committed, loop_ran.is_set(), _stored(path), group.waited)
    holder.close()
    db.close()


def _locked_by_another_connection(path: Path) -> sqlite3.Connection:
    """Another connection (another process, say) in a write transaction on `path`."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    return holder


async def _cancel_when_blocked(scope: anyio.CancelScope) -> None:
    await wait_all_tasks_blocked()
    scope.cancel()


async def test_a_full_database_fails_the_batch_and_the_mark_stays_true(tmp_path: Path) -> None:
    """When the database has no room, every send of the batch fails and the mark file's
    counters still match the database's (nothing counted that was not committed)."""
    path = tmp_path / "f.sqlite3"
    failures: list[str] = []

    async def send(n: int) -> None:
        try:
            await box.send(Envelope("box", Ping(n=n)))
        except Exception as exc:  # noqa: BLE001 - the test counts what each caller got
            failures.append(type(exc).__name__)

    async with SqliteStore.open(path) as store:
        box = SqliteMailbox("box", store, CODEC, capacity=4096)
        pages = await store.run(lambda: store._db.execute("PRAGMA page_count").fetchone()[0])
        await store.run(lambda: store._db.execute(f"PRAGMA max_page_count = {pages + 2}"))
        async with anyio.create_task_group() as group:
            for n in range(400):
                group.start_soon(send, n)
        assert failures
        assert {"DiskFullFailure"} == set(failures)
        stored = await store.run(
            lambda: store._db.execute(
                "SELECT seq FROM sqlite_sequence WHERE name = 'envelopes'"
            ).fetchone()[0]
        )
        marked = int(path.with_suffix(".mark").read_text().split()[3])
        assert stored == marked
        assert 400 - len(failures) == stored


class Text(BaseModel):
    text: str


async def test_a_large_envelope_is_written_and_acked_off_the_event_loop(tmp_path: Path) -> None:
    """An envelope stored as more than 64 KiB is inserted and acked by a batch committed on
    the worker thread (copying it into the -wal would hold every actor); a small one, and the
    take between, on the event loop."""
    threads: dict[str, set[int]] = {}
    loop_thread = threading.get_ident()

    async with SqliteStore.open(tmp_path / "big.sqlite3") as store:
        for name in ("insert", "take", "ack"):
            original = getattr(store, name)

            def recording(*args: object, _name: str = name, _fn: Any = original) -> Any:
                threads.setdefault(_name, set()).add(threading.get_ident())
                return _fn(*args)

            setattr(store, name, recording)
        box = SqliteMailbox("box", store, EnvelopeCodec({"Text": Text}), capacity=8)
        await box.send(Envelope("box", Text(text="x" * (LARGE_BODY + 1))))
        delivery = await box.receive()
        await box.ack(delivery)
        large = {name: loop_thread in ids for name, ids in threads.items()}
        threads.clear()
        await box.send(Envelope("box", Text(text="small")))
        await box.ack(await box.receive())
        small = {name: loop_thread in ids for name, ids in threads.items()}
    assert {"insert": False, "take": True, "ack": False} == large
    assert {"insert": True, "take": True, "ack": True} == small


async def test_a_message_taken_with_an_ack_waits_for_that_ack_to_commit(tmp_path: Path) -> None:
    """An ack that finds the database locked commits, on the worker thread, the next
    message's take with it: a receive meanwhile hands that message out only once the
    transaction is committed, and without a take of its own."""
    path = tmp_path / "a.sqlite3"
    async with SqliteStore.open(path) as store:
        box = SqliteMailbox("box", store, CODEC, capacity=8)
        await box.send(Envelope("box", Ping(n=1)))
        await box.send(Envelope("box", Ping(n=2)))
        first = await box.receive()
        before = store.batches
        holder = _locked_by_another_connection(path)
        received: list[int] = []

        async def receive() -> None:
            received.append((await box.receive()).envelope.payload.n)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(box.ack, first)
            await wait_all_tasks_blocked()  # the ack's batch waits for the lock, on the thread
            tasks.start_soon(receive)
            await wait_all_tasks_blocked()
            while_locked = list(received)
            holder.execute("ROLLBACK")
        holder.close()
        used = store.batches - before
        row = await store.run(
            lambda: store._db.execute("SELECT in_flight, deliveries FROM envelopes").fetchall()
        )
    assert ([], [2]) == (while_locked, received)
    # Taken once, in one transaction: the ack's, on the thread (no take of the receive's own).
    assert ([(1, 1)], 1, 1) == (row, used, store._group.waited)
