"""SqliteMailbox's own ways (the rules every mailbox keeps are in `test_contract.py`): what it
writes to the database's `dead_letters` table, a stored row it cannot read back, and the
runtime's default mailbox in a workspace."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import ClassVar

import anyio
from anyio import wait_all_tasks_blocked
from pydantic import BaseModel

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


async def test_a_message_that_kills_every_process_is_dead_lettered(tmp_path: Path) -> None:
    """Dead-lettered at the third start with max_attempts=2: the sink and the database's
    `dead_letters` table hold it with the reason, and the next message is delivered."""
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


async def test_an_unreadable_stored_message_is_dead_lettered_and_the_next_delivered(
    tmp_path: Path,
) -> None:
    """A stored row whose type no handler knows is moved to `dead_letters` with the codec's
    reason when the mailbox loads; the message behind it is delivered."""
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


def _taken(db: Path) -> dict[int, tuple[int, int]]:
    """Each stored row's (in_flight, deliveries), by seq, as another connection sees them."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT seq, in_flight, deliveries FROM envelopes").fetchall()
    conn.close()
    return {seq: (in_flight, deliveries) for seq, in_flight, deliveries in rows}


async def test_a_backlog_is_drained_in_one_transaction_a_message(tmp_path: Path) -> None:
    """With messages waiting, each ack commits the next message's take with it: 20 messages
    received and acked take 21 transactions (the first take alone), each delivered once."""
    async with process(tmp_path / "m.sqlite3") as open_box:
        box = await open_box(capacity=32)
        for n in range(20):
            await box.send(ping(n))
        store = box._store
        before = store.batches
        delivered = []
        for _ in range(20):
            delivery = await box.receive()
            delivered.append((delivery.envelope.payload.n, delivery.envelope.attempt))
            await box.ack(delivery)
        used = store.batches - before
        left = await store.run(store.pending)
    assert [(n, 1) for n in range(20)] == delivered
    assert (21, 0) == (used, left)


async def test_a_message_taken_with_an_ack_is_given_back_when_the_mailbox_stops(
    tmp_path: Path,
) -> None:
    """The message behind an acked one is taken in the ack's transaction; stopped before it
    was handed out, the mailbox gives that take back, so the next start delivers it as its
    first attempt."""
    db = tmp_path / "m.sqlite3"
    async with process(db) as open_box:
        box = await open_box()
        for n in range(3):
            await box.send(ping(n))
        first = await box.receive()
        await box.ack(first)
        taken_with_the_ack = _taken(db)
        box.drain_nowait()  # the actor stops
    async with process(db) as open_box:
        box = await open_box()
        again = [await box.receive() for _ in range(2)]
    assert {2: (1, 1), 3: (0, 0)} == taken_with_the_ack
    assert [(1, 1), (2, 1)] == [(d.envelope.payload.n, d.envelope.attempt) for d in again]
