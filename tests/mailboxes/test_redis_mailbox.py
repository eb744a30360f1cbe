"""RedisMailbox's own ways against a real redis-server (the rules every mailbox keeps are in
`test_contract.py`): stream entries and their ids, consumer groups, claims after a consumer
dies, attempts from delivery counts, leases kept alive, the dead-letter stream, fetching
ahead, and what one process sees of another's sends and acks."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest
from anyio.lowlevel import checkpoint
from pydantic import BaseModel
from redis.asyncio import Redis
from structlog.testing import capture_logs

from baton.mailboxes import Delivery, Envelope
from baton.mailboxes.codec import EnvelopeCodec
from baton.mailboxes.errors import MailboxClosedError
from baton.mailboxes.redis import RedisMailbox
from tests.mailboxes.sinks import Sink
from tests.redis_server import running_redis


class Ping(BaseModel):
    n: int


class Note(BaseModel):
    text: str


CODEC = EnvelopeCodec({"Ping": Ping, "Note": Note})
STREAM = "baton:mailbox:{box}"
DEAD = "baton:dead:{box}"
Boxes = Callable[..., RedisMailbox]


def ping(n: int) -> Envelope:
    return Envelope("box", Ping(n=n))


def numbers(deliveries: list[Delivery]) -> list[int]:
    return [d.envelope.payload.n for d in deliveries]


async def until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    """Yield to the other tasks until `predicate` holds; fail after `timeout` seconds."""
    with anyio.fail_after(timeout):
        while not predicate():
            await checkpoint()


def make_boxes(client: Redis, made: list[RedisMailbox]) -> Boxes:
    def make(consumer: str = "a", *, sink: Sink | None = None, **options: Any) -> RedisMailbox:
        settings: dict[str, Any] = {"capacity": 8, "claim_idle": 30.0, **options}
        box = RedisMailbox(
            "box", client=client, codec=CODEC, dead_letters=sink, consumer=consumer, **settings
        )
        made.append(box)
        return box

    return make


@pytest.fixture(params=["redis", "redis-cluster"])
def client(request: pytest.FixtureRequest) -> Redis:
    """A client of an empty single server, then of an empty three-primary cluster."""
    name = "redis_cluster_client" if request.param == "redis-cluster" else "redis_client"
    found: Redis = request.getfixturevalue(name)
    return found


@pytest.fixture
def boxes(client: Redis) -> Iterator[Boxes]:
    """Make mailboxes on the test's client; each is drained (closed) after the test."""
    made: list[RedisMailbox] = []
    yield make_boxes(client, made)
    for box in made:
        box.drain_nowait()


async def test_deliveries_are_tagged_with_increasing_entry_ids(boxes: Boxes, client: Redis) -> None:
    """Each delivery's tag is its stream entry id, increasing in send order; acking them all
    leaves the stream empty."""
    box = boxes()
    for n in range(5):
        await box.send(ping(n))
    received = [await box.receive() for _ in range(5)]
    tags = [d.tag for d in received]
    assert sorted(tags, key=lambda t: tuple(map(int, str(t).split("-")))) == tags
    assert 5 == await client.xlen(STREAM)
    for delivery in received:
        await box.ack(delivery)
    assert 0 == await client.xlen(STREAM)


async def test_ack_removes_the_entry_for_good(boxes: Boxes, client: Redis) -> None:
    """An acked entry is neither pending nor in the stream: another consumer never sees it."""
    first = boxes("a", read_batch=1)
    await first.send(ping(1))
    await first.send(ping(2))
    delivery = await first.receive()
    await first.ack(delivery)
    assert 0 == (await client.xpending(STREAM, "box"))["pending"]
    assert 1 == await client.xlen(STREAM)
    # A consumer that claims anything idle for a millisecond still gets only the unread one.
    other = boxes("b", claim_idle=0.001)
    with anyio.fail_after(5):
        assert [2] == numbers([await other.receive()])


async def test_a_dead_consumers_entry_is_claimed_after_claim_idle(
    boxes: Boxes, client: Redis
) -> None:
    """An entry received but never acked by a consumer that died goes to another consumer,
    as the same entry on its second attempt."""
    dying = boxes("a")
    await dying.send(ping(7))
    lost = await dying.receive()
    dying.drain_nowait()  # the process dies: no ack, no nack
    survivor = boxes("b", claim_idle=0.05)
    with anyio.fail_after(5):
        claimed = await survivor.receive()
    assert (7, 2, lost.tag) == (claimed.envelope.payload.n, claimed.envelope.attempt, claimed.tag)
    pending = await client.xpending_range(STREAM, "box", "-", "+", 10)
    assert [b"b"] == [p["consumer"] for p in pending]
    await survivor.ack(claimed)
    assert 0 == await client.xlen(STREAM)


async def test_nack_requeue_redelivers_first_with_the_next_attempt(
    boxes: Boxes, client: Redis
) -> None:
    """A requeued delivery comes back before later messages, one attempt later, and the
    stream's delivery count follows (so a crash does not reset it)."""
    box = boxes()
    await box.send(ping(1))
    await box.send(ping(2))
    first = await box.receive()
    await box.nack(first, requeue=True, reason="try again")
    again = box.receive_nowait()
    assert again is not None
    assert (1, 2, first.tag) == (again.envelope.payload.n, again.envelope.attempt, again.tag)
    assert first.envelope.id == again.envelope.id
    pending = await client.xpending_range(STREAM, "box", first.tag, first.tag, 1)
    assert 2 == pending[0]["times_delivered"]
    assert [2] == numbers([await box.receive()])


async def test_nack_dead_letters_with_the_reason(boxes: Boxes, client: Redis) -> None:
    """A nack without requeue, or a requeue past max_attempts, moves the entry to the dead
    stream with its reason and hands it to the sink."""
    sink = Sink()
    box = boxes(sink=sink, max_attempts=2)
    await box.send(ping(1))
    await box.send(ping(2))
    first = await box.receive()
    await box.nack(first, requeue=False, reason="bad input")
    second = await box.receive()
    await box.nack(second, requeue=True, reason="flaky")
    retried = await box.receive()
    assert 2 == retried.envelope.attempt
    await box.nack(retried, requeue=True, reason="flaky")
    assert [(1, "bad input"), (2, "flaky (requeued past max_attempts=2)")] == [
        (e.payload.n, r) for e, r in sink.letters
    ]
    dead = await client.xrange(DEAD)
    assert [b"bad input", b"flaky (requeued past max_attempts=2)"] == [f[b"r"] for _, f in dead]
    assert [1, 2] == [CODEC.decode(f[b"e"]).payload.n for _, f in dead]
    assert 0 == await client.xlen(STREAM)
    assert box.receive_nowait() is None


async def test_a_big_dead_letter_keeps_an_excerpt_its_size_and_hash(
    boxes: Boxes, client: Redis
) -> None:
    """A 1 MB message given up on leaves a 4 KB excerpt in the dead stream, with the body's
    size and SHA-256 in the reason, so one refused request cannot grow Redis without bound."""
    box = boxes(sink=Sink())
    await box.send(Envelope("box", Note(text="x" * 1_000_000)))
    delivery = await box.receive()
    await box.nack(delivery, requeue=False, reason="too big to handle")
    ((_, fields),) = await client.xrange(DEAD)
    assert 4096 == len(fields[b"e"])
    reason = fields[b"r"].decode()
    assert reason.startswith("too big to handle (body cut to an excerpt: ")
    assert "sha256 " in reason


async def test_delivery_count_past_max_attempts_is_dead_lettered(
    boxes: Boxes, client: Redis
) -> None:
    """An entry whose delivery count passes max_attempts is dead-lettered with the reason,
    not delivered; the next message still is."""
    await client.xgroup_create(STREAM, "box", id="0", mkstream=True)
    entry = await client.xadd(STREAM, {"e": CODEC.encode(ping(1))})
    await client.xreadgroup("box", "ghost", {STREAM: ">"}, count=1)
    # Three deliveries already, long idle: as if consumers kept dying while handling it.
    await client.xclaim(STREAM, "box", "ghost", 0, [entry], idle=60_000, retrycount=3)
    sink = Sink()
    box = boxes("b", sink=sink, max_attempts=3, claim_idle=1.0)
    await box.send(ping(2))
    with anyio.fail_after(5):
        delivered = await box.receive()
    assert [2] == numbers([delivered])
    assert [(1, 4)] == [(e.payload.n, e.attempt) for e, _ in sink.letters]
    assert "delivered 4 times, more than max_attempts=3" == sink.letters[0][1]
    dead = await client.xrange(DEAD)
    assert [b"delivered 4 times, more than max_attempts=3"] == [f[b"r"] for _, f in dead]
    await box.ack(delivered)
    assert (0, 0) == (await client.xlen(STREAM), (await client.xpending(STREAM, "box"))["pending"])


async def test_undecodable_entries_are_dead_lettered_and_the_next_is_delivered(
    boxes: Boxes, client: Redis
) -> None:
    """Garbage, an unknown type and a missing field are dead-lettered with the codec's reason;
    the receiver carries on with the good message behind them."""
    sink = Sink()
    box = boxes(sink=sink)
    unknown = json.loads(CODEC.encode(ping(5)))
    unknown["type"] = "Gone"
    await client.xadd(STREAM, {"e": "not json at all"})
    await client.xadd(STREAM, {"e": json.dumps(unknown)})
    await client.xadd(STREAM, {"x": "1"})
    await box.send(ping(3))
    with anyio.fail_after(5):
        delivered = await box.receive()
    assert [3] == numbers([delivered])
    reasons = [reason for _, reason in sink.letters]
    assert 3 == len(reasons)
    assert reasons[0].startswith("stored envelope is not JSON")
    assert "'Gone' is not handled here" in reasons[1]
    assert "no 'e'" in reasons[2]
    # The stand-in envelope keeps the message's own id when the body still says it.
    assert f"{unknown['origin']}-{unknown['seq']:x}" == sink.letters[1][0].id
    dead = await client.xrange(DEAD)
    assert [b"not json at all"] == [f[b"e"] for _, f in dead[:1]]
    assert [r.encode() for r in reasons] == [f[b"r"] for _, f in dead]
    await box.ack(delivered)
    assert 0 == await client.xlen(STREAM)


async def test_an_envelope_sent_twice_is_received_once(boxes: Boxes, client: Redis) -> None:
    """Resending the same envelope id (a retried send) stores it once, one by one or in bulk."""
    box = boxes(read_batch=1)
    once, other = ping(1), ping(2)
    await box.send(once)
    await box.send(once)
    await box.send_many([other, once, other])
    assert 2 == await client.xlen(STREAM)
    received = [await box.receive(), await box.receive()]
    assert [1, 2] == numbers(received)
    assert box.receive_nowait() is None
    await box.ack_many(received)
    assert 0 == await client.xlen(STREAM)


async def test_a_full_mailbox_parks_send_until_an_ack(boxes: Boxes, client: Redis) -> None:
    """With capacity 2, a third send waits until one of the two is acked, then lands last."""
    box = boxes(capacity=2)
    await box.send(ping(1))
    await box.send(ping(2))
    stored = anyio.Event()

    async def third() -> None:
        await box.send(ping(3))
        stored.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(third)
        await until(lambda: box._senders_waiting == 1)
        assert not stored.is_set()
        assert 2 == await client.xlen(STREAM)
        first = await box.receive()
        assert not stored.is_set()  # received is not enough: the entry still holds its place
        await box.ack(first)
        with anyio.fail_after(5):
            await stored.wait()
    assert 2 == await client.xlen(STREAM)
    assert [2, 3] == numbers([await box.receive(), await box.receive()])


async def test_an_ack_elsewhere_releases_a_parked_send(boxes: Boxes, client: Redis) -> None:
    """A sender parked on a full stream notices room made by another process's ack."""
    producer = boxes("p", capacity=1)
    consumer = boxes("c", capacity=1)
    await producer.send(ping(1))
    stored = anyio.Event()

    async def second() -> None:
        await producer.send(ping(2))
        stored.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(second)
        await until(lambda: producer._senders_waiting == 1)
        await consumer.ack(await consumer.receive())
        with anyio.fail_after(5):
            await stored.wait()
    assert [2] == numbers([await consumer.receive()])


async def test_close_drains_the_buffer_then_reports_closed(boxes: Boxes) -> None:
    """After close, sends fail and what was already read still comes out, then closed."""
    box = boxes(read_batch=8)
    for n in range(3):
        await box.send(ping(n))
    first = await box.receive()
    await box.close()
    with pytest.raises(MailboxClosedError):
        await box.send(ping(9))
    rest = [await box.receive(), await box.receive()]
    assert [0, 1, 2] == numbers([first, *rest])
    with pytest.raises(MailboxClosedError):
        await box.receive()


async def test_close_wakes_a_receiver_blocked_in_redis(boxes: Boxes) -> None:
    """A receiver blocked in XREADGROUP is released by close at once, not after `block`."""
    box = boxes(block=30.0)
    outcome: list[str] = []

    async def receiver() -> None:
        try:
            await box.receive()
        except MailboxClosedError:
            outcome.append("closed")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(receiver)
            await until(lambda: box._read_scope is not None)
            await box.close()
    assert ["closed"] == outcome


async def test_receive_is_cancellable_and_the_mailbox_still_works(boxes: Boxes) -> None:
    """Cancelling a receive blocked in Redis returns promptly; the next send still arrives."""
    box = boxes(block=30.0)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(box.receive)
            await until(lambda: box._read_scope is not None)
            tg.cancel_scope.cancel()
    await box.send(ping(4))
    with anyio.fail_after(5):
        assert [4] == numbers([await box.receive()])


async def test_a_restarted_consumer_gets_its_own_pending_entries_first(
    boxes: Boxes, client: Redis
) -> None:
    """The same consumer name, restarted, is handed its unacked entries (next attempt) before
    anything new; drain_nowait left them in Redis."""
    before = boxes("worker-1", read_batch=8)
    await before.send(ping(1))
    await before.send(ping(2))
    handed = await before.receive()  # in hand; ping 2 sits in the local buffer
    assert [] == before.drain_nowait()
    assert 2 == await client.xlen(STREAM)
    await boxes("producer").send(ping(3))
    after = boxes("worker-1")
    with anyio.fail_after(5):
        received = [await after.receive() for _ in range(3)]
    assert [1, 2, 3] == numbers(received)
    assert [2, 2, 1] == [d.envelope.attempt for d in received]
    assert handed.tag == received[0].tag


async def test_depth_counts_waiting_not_in_hand(boxes: Boxes) -> None:
    """depth() counts stored and buffered messages, not the one being handled."""
    box = boxes(read_batch=2)
    for n in range(3):
        await box.send(ping(n))
    assert 3 == box.depth()
    in_hand = await box.receive()
    assert 2 == box.depth()
    await box.ack(in_hand)
    assert 2 == box.depth()
    for _ in range(2):
        await box.ack(await box.receive())
    assert 0 == box.depth()


async def test_two_consumers_share_the_work_exactly_once(boxes: Boxes, client: Redis) -> None:
    """Two producers and two consumers through a small mailbox: every message is handled
    once, none lost, none twice."""
    total = 120
    producers = [boxes(f"p{i}", capacity=10) for i in range(2)]
    consumers = [boxes(f"c{i}", capacity=10, read_batch=4) for i in range(2)]
    handled: list[int] = []

    async def produce(box: RedisMailbox, numbers_: range) -> None:
        for n in numbers_:
            await box.send(ping(n))

    async def consume(box: RedisMailbox) -> None:
        while len(handled) < total:
            delivery = None
            # A receive cancelled mid-read must not lose what the read took from the stream.
            with anyio.move_on_after(0.05):
                delivery = await box.receive()
            if delivery is not None:
                handled.append(delivery.envelope.payload.n)
                await box.ack(delivery)

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(produce, producers[0], range(0, total, 2))
            tg.start_soon(produce, producers[1], range(1, total, 2))
            for box in consumers:
                tg.start_soon(consume, box)
    assert list(range(total)) == sorted(handled)
    assert 0 == await client.xlen(STREAM)


@pytest.mark.parametrize(
    "options",
    [{"protocol": 3}, {"legacy_responses": False}, {"decode_responses": True}],
    ids=["resp3", "unified", "decoded"],
)
async def test_other_client_settings(redis_url: str, options: dict[str, Any]) -> None:
    """The RESP3 protocol and decoded responses read the same: order, claims, dead letters."""
    client = Redis.from_url(redis_url, **options)
    made: list[RedisMailbox] = []
    boxes = make_boxes(client, made)
    try:
        sink = Sink()
        await client.xadd(STREAM, {"e": "garbage"})
        dying = boxes("a", sink=sink)
        await dying.send(ping(1))
        await dying.send(ping(2))
        with anyio.fail_after(5):
            assert [1] == numbers([await dying.receive()])
        dying.drain_nowait()
        survivor = boxes("b", sink=sink, claim_idle=0.05)
        with anyio.fail_after(5):
            received = [await survivor.receive(), await survivor.receive()]
        assert [(1, 2), (2, 2)] == [(d.envelope.payload.n, d.envelope.attempt) for d in received]
        assert 1 == len(sink.letters)
        for delivery in received:
            await survivor.ack(delivery)
        assert 0 == await client.xlen(STREAM)
    finally:
        for box in made:
            box.drain_nowait()
        await client.aclose()


async def test_unacked_messages_survive_a_server_restart_with_aof() -> None:
    """With AOF on, stored and in-hand messages outlive a redis-server restart."""
    with running_redis(aof=True) as server:
        client = Redis.from_url(server.url)
        made: list[RedisMailbox] = []
        boxes = make_boxes(client, made)
        try:
            box = boxes("w")
            await box.send(ping(1))
            await box.send(ping(2))
            await box.receive()
            await client.aclose()
            server.restart()
            client = Redis.from_url(server.url)
            again = make_boxes(client, made)("w")
            with anyio.fail_after(5):
                received = [await again.receive(), await again.receive()]
            assert [(1, 2), (2, 2)] == [
                (d.envelope.payload.n, d.envelope.attempt) for d in received
            ]
        finally:
            for made_box in made:
                made_box.drain_nowait()
            await client.aclose()


async def test_keep_alive_holds_an_entry_past_claim_idle_until_it_stops(
    boxes: Boxes, client: Redis
) -> None:
    """While A heartbeats at `heartbeat_interval`, B cannot claim the entry A holds, however
    long past `claim_idle`; once A stops, B claims it, on its second attempt."""
    idle = 0.2
    a = boxes("a", claim_idle=idle)
    b = boxes("b", claim_idle=idle)
    assert idle / 3 == a.heartbeat_interval
    await a.send(ping(1))
    held = await a.receive()
    stop = anyio.Event()
    kept: list[int] = []
    taken: list[Delivery] = []

    async def heartbeat() -> None:
        while not stop.is_set():
            kept.append(await a.keep_alive())
            with anyio.move_on_after(a.heartbeat_interval):
                await stop.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(heartbeat)
        # B scans for idle entries every claim_idle / 2 throughout.
        with anyio.move_on_after(2.2 * idle):
            taken.append(await b.receive())
        stop.set()
    assert [] == taken
    assert len(kept) >= 3
    assert {1} == set(kept)
    with anyio.fail_after(5):
        claimed = await b.receive()
    assert (held.tag, 1, 2) == (claimed.tag, claimed.envelope.payload.n, claimed.envelope.attempt)
    await b.ack(claimed)
    assert 0 == await client.xlen(STREAM)


async def test_entries_taken_from_a_stalled_consumer_are_reported_lost(
    boxes: Boxes, client: Redis
) -> None:
    """A's heartbeat after a stall finds one entry claimed by B and one B already settled:
    both are lost, the buffered one is not handed out, A's ack of the one in hand neither
    raises nor settles B's entry, and B's ack settles it once."""
    sink = Sink()
    a = boxes("a", sink=sink, read_batch=2)
    await a.send(ping(1))
    await a.send(ping(2))
    in_hand = await a.receive()  # ping 2 waits in A's buffer
    b = boxes("b", sink=sink, claim_idle=0.001)  # A stalls: to B its entries are idle at once
    with anyio.fail_after(5):
        claimed = [await b.receive(), await b.receive()]
    assert [(1, 2), (2, 2)] == [(d.envelope.payload.n, d.envelope.attempt) for d in claimed]
    await b.ack(claimed[1])
    with capture_logs() as logs:
        assert 0 == await a.keep_alive()
    assert [(2, 1)] == [
        (e["entries"], e["in_hand"]) for e in logs if e["event"] == "mailbox.entries_lost"
    ]
    assert a.receive_nowait() is None
    assert {} == a._held
    await a.ack(in_hand)
    pending = await client.xpending_range(STREAM, "box", "-", "+", 10)
    assert [(in_hand.tag, b"b")] == [(p["message_id"].decode(), p["consumer"]) for p in pending]
    assert 1 == await client.xlen(STREAM)
    await b.ack(claimed[0])
    assert (0, 0) == (await client.xlen(STREAM), (await client.xpending(STREAM, "box"))["pending"])
    assert [] == sink.letters


async def test_a_lost_entrys_nack_leaves_it_to_its_new_owner(boxes: Boxes, client: Redis) -> None:
    """Nacking a lost delivery neither requeues it (which would steal it back from the
    consumer now handling it) nor dead-letters it."""
    sink = Sink()
    a = boxes("a", sink=sink, read_batch=2)
    await a.send(ping(1))
    await a.send(ping(2))
    first, second = await a.receive(), await a.receive()
    b = boxes("b", sink=sink, claim_idle=0.001)
    with anyio.fail_after(5):
        claimed = [await b.receive(), await b.receive()]
    assert 0 == await a.keep_alive()
    await a.nack(first, requeue=True, reason="retry")
    await a.nack(second, requeue=False, reason="give up")
    assert a.receive_nowait() is None
    assert [] == sink.letters
    assert 0 == await client.xlen(DEAD)
    pending = await client.xpending_range(STREAM, "box", "-", "+", 10)
    assert [(b"b", 2), (b"b", 2)] == [(p["consumer"], p["times_delivered"]) for p in pending]
    await b.ack_many(claimed)
    assert 0 == await client.xlen(STREAM)


async def test_keep_alive_does_not_count_as_a_delivery(boxes: Boxes, client: Redis) -> None:
    """Heartbeats leave the delivery count alone: after several, the entry claimed from the
    stalled consumer arrives on its second attempt."""
    a = boxes("a")
    await a.send(ping(1))
    held = await a.receive()
    assert [1, 1, 1, 1, 1] == [await a.keep_alive() for _ in range(5)]
    pending = await client.xpending_range(STREAM, "box", "-", "+", 10)
    assert [(b"a", 1)] == [(p["consumer"], p["times_delivered"]) for p in pending]
    b = boxes("b", claim_idle=0.001)
    with anyio.fail_after(5):
        claimed = await b.receive()
    assert (held.tag, 2) == (claimed.tag, claimed.envelope.attempt)


async def test_keep_alive_is_one_round_trip_and_none_with_nothing_held(
    boxes: Boxes, client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One script call renews every held entry, buffered or in hand; with nothing held,
    keep_alive returns 0 without a word to Redis."""
    box = boxes(read_batch=8)
    for n in range(3):
        await box.send(ping(n))
    deliveries = [await box.receive()]  # two more wait in the buffer
    assert 3 == await box.keep_alive()  # loads the script if this server lacks it
    commands: list[object] = []
    execute = client.execute_command

    async def counting(*args: Any, **options: Any) -> Any:
        commands.append(args[0])
        return await execute(*args, **options)

    monkeypatch.setattr(client, "execute_command", counting)
    assert 3 == await box.keep_alive()
    assert ["EVALSHA"] == commands
    deliveries += [await box.receive(), await box.receive()]
    await box.ack_many(deliveries)
    commands.clear()
    assert 0 == await box.keep_alive()
    assert [] == commands


async def test_keep_alive_after_the_stream_was_deleted_drops_what_it_held(
    boxes: Boxes, client: Redis
) -> None:
    """With the stream gone (FLUSHDB, an operator), everything held is lost; the mailbox
    goes on with what is sent next."""
    box = boxes(read_batch=2)
    await box.send(ping(1))
    await box.send(ping(2))
    in_hand = await box.receive()
    await client.delete(STREAM)
    assert 0 == await box.keep_alive()
    assert box.receive_nowait() is None
    await box.ack(in_hand)
    await box.send(ping(3))
    with anyio.fail_after(5):
        assert [3] == numbers([await box.receive()])
