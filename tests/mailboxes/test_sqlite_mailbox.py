"""SqliteMailbox: stored on send, redelivered after a crash, deduplicated, dead-lettered with
a reason, bounded; and the runtime's default in a workspace."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import ClassVar

import anyio
import pytest
from anyio import wait_all_tasks_blocked
from pydantic import BaseModel

from baton.errors import InvalidMessageError, MailboxBlockedError, MailboxClosedError
from baton.mailboxes import Envelope
from baton.mailboxes.codec import EnvelopeCodec
from baton.mailboxes.sqlite import SqliteMailbox, SqliteStore
from baton.runtime import Actor, Runtime, handler
from tests.mailboxes.sinks import Sink


class Ping(BaseModel):
    n: int


CODEC = EnvelopeCodec({"Ping": Ping})
Opener = Callable[..., Awaitable[SqliteMailbox]]


@asynccontextmanager
async def process(path: Path, sink: Sink | None = None) -> AsyncIterator[Opener]:
    """One 'process life' of the database: its mailboxes die with it, unacked."""
    async with SqliteStore.open(path) as store:

        async def open_box(name: str = "box", **options: int) -> SqliteMailbox:
            settings = {"capacity": 8, "max_attempts": 3, **options}
            return SqliteMailbox(name, store, CODEC, dead_letters=sink, **settings)

        yield open_box


def ping(n: int) -> Envelope:
    return Envelope("box", Ping(n=n))


async def test_fifo_and_ack_removes_for_good(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite3"
    async with process(db) as open_box:
        box = await open_box()
        for n in range(3):
            await box.send(ping(n))
        got = [await box.receive() for _ in range(3)]
        for delivery in got:
            await box.ack(delivery)
    async with process(db) as open_box:
        box = await open_box()
        await box.close()
        with pytest.raises(MailboxClosedError):
            await box.receive()
    assert [0, 1, 2] == [d.envelope.payload.n for d in got]


async def test_unacked_messages_are_redelivered_after_a_crash_one_attempt_later(
    tmp_path: Path,
) -> None:
    db = tmp_path / "m.sqlite3"
    async with process(db) as open_box:
        box = await open_box()
        first = ping(1)
        await box.send(first)
        await box.send(ping(2))
        taken = await box.receive()  # in flight when the process "dies"
    async with process(db) as open_box:
        box = await open_box()
        again = [await box.receive() for _ in range(2)]
    assert first.id == taken.envelope.id == again[0].envelope.id
    assert [(1, 2), (2, 1)] == [(d.envelope.payload.n, d.envelope.attempt) for d in again]
    assert Ping(n=1) == again[0].envelope.payload


async def test_a_message_that_kills_every_process_is_dead_lettered(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite3"
    sink = Sink()
    async with process(db, sink) as open_box:
        box = await open_box(max_attempts=2)
        await box.send(ping(7))
        await box.send(ping(8))
        await box.receive()  # taken, never acked: the process dies handling it
    async with process(db, sink) as open_box:
        box = await open_box(max_attempts=2)
        retried = await box.receive()  # and dies again
    async with process(db, sink) as open_box:
        box = await open_box(max_attempts=2)
        survivor = await box.receive()
    with sqlite3.connect(db) as conn:
        dead = conn.execute("SELECT recipient, reason FROM dead_letters").fetchall()
    conn.close()
    assert (7, 2) == (retried.envelope.payload.n, retried.envelope.attempt)
    assert 8 == survivor.envelope.payload.n
    assert [7] == [e.payload.n for e, _ in sink.letters]
    assert [("box", sink.letters[0][1])] == dead
    assert "delivered 2 time(s) and never acked" in sink.letters[0][1]


async def test_an_envelope_sent_again_with_a_known_id_is_dropped(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite3"
    async with process(db) as open_box:
        box = await open_box()
        message = ping(1)
        await box.send(message)
        await box.send(message)  # queued twice
        delivery = await box.receive()
        await box.ack(delivery)
        await box.send(message)  # acked, then re-sent (a sender that crashed and retried)
        depth = box.depth()
    assert (1, 0) == (delivery.envelope.payload.n, depth)


async def test_an_unreadable_stored_message_is_dead_lettered_and_the_next_delivered(
    tmp_path: Path,
) -> None:
    db = tmp_path / "m.sqlite3"
    sink = Sink()
    async with process(db, sink) as open_box:
        await (await open_box()).send(ping(1))
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO envelopes (id, recipient, body) VALUES ('x-1', 'box', '{\"format\": 1, "
            '"type": "Gone", "payload": {}}\')'
        )
        conn.execute("UPDATE envelopes SET seq = 0 WHERE id = 'x-1'")
    conn.close()
    async with process(db, sink) as open_box:
        delivery = await (await open_box()).receive()
    with sqlite3.connect(db) as conn:
        dead = conn.execute("SELECT id, reason FROM dead_letters").fetchall()
    conn.close()
    assert 1 == delivery.envelope.payload.n
    assert 1 == len(dead)
    assert "stored message type 'Gone' is not handled here; known: Ping" in dead[0][1]


async def test_nack_requeues_first_or_dead_letters_with_the_reason(tmp_path: Path) -> None:
    sink = Sink()
    async with process(tmp_path / "m.sqlite3", sink) as open_box:
        box = await open_box()
        await box.send(ping(1))
        await box.send(ping(2))
        first = await box.receive()
        await box.nack(first, requeue=True, reason="try again")
        again = await box.receive()
        await box.nack(again, requeue=False, reason="gave up")
        second = await box.receive()
    assert [(1, 2), (2, 1)] == [(d.envelope.payload.n, d.envelope.attempt) for d in (again, second)]
    assert [(1, "gave up")] == [(e.payload.n, r) for e, r in sink.letters]


async def test_send_waits_while_full_and_send_nowait_is_refused(tmp_path: Path) -> None:
    async with process(tmp_path / "m.sqlite3") as open_box:
        box = await open_box(capacity=1)
        await box.send(ping(1))
        sent = anyio.Event()

        async def third() -> None:
            await box.send(ping(2))
            sent.set()

        with pytest.raises(MailboxBlockedError):
            box.send_nowait(ping(9))
        async with anyio.create_task_group() as tg:
            tg.start_soon(third)
            await wait_all_tasks_blocked()
            waited = not sent.is_set()
            await box.receive()
            with anyio.fail_after(5):
                await sent.wait()
    assert waited


async def test_close_lets_receive_drain_then_refuses(tmp_path: Path) -> None:
    async with process(tmp_path / "m.sqlite3") as open_box:
        box = await open_box()
        await box.send(ping(1))
        await box.close()
        with pytest.raises(MailboxClosedError):
            await box.send(ping(2))
        drained = await box.receive()
        with pytest.raises(MailboxClosedError):
            await box.receive()
    assert 1 == drained.envelope.payload.n


def test_the_codec_refuses_what_it_cannot_store_or_read() -> None:
    with pytest.raises(InvalidMessageError, match="pydantic messages only"):
        CODEC.encode(Envelope("box", {"n": 1}))
    with pytest.raises(InvalidMessageError, match="does not validate"):
        CODEC.decode(CODEC.encode(ping(1)).replace('"n":1', '"n":"one"'))
    with pytest.raises(InvalidMessageError, match="not JSON"):
        CODEC.decode("{")


class Stuck(Actor):
    @handler
    async def ping(self, message: Ping) -> None:
        await anyio.sleep_forever()


class Counter(Actor):
    seen: ClassVar[list[tuple[int, int]]] = []

    @handler
    async def ping(self, message: Ping) -> None:
        envelope = self.actor_envelope
        assert envelope is not None
        Counter.seen.append((message.n, envelope.attempt))


async def test_a_workspace_runtime_keeps_what_it_did_not_finish_for_the_next_start(
    tmp_path: Path,
) -> None:
    """One message in flight and one queued when the runtime stops: the next runtime in the
    workspace handles both, the interrupted one as its second attempt."""
    async with Runtime.open(tmp_path, shutdown_timeout=0) as rt:
        await rt.spawn("counter", Stuck)
        await rt.tell("counter", Ping(n=1))
        await rt.tell("counter", Ping(n=2))
        with anyio.fail_after(5):
            while rt.status()[0].mailbox_depth != 1:
                await wait_all_tasks_blocked()
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("counter", Counter)
        with anyio.fail_after(5):
            while len(Counter.seen) < 2:
                await wait_all_tasks_blocked()
    assert [(1, 2), (2, 1)] == Counter.seen
