"""The contract every mailbox backend keeps (`baton.mailboxes.protocol.Mailbox`; docs/
architecture.md, "mailboxes/"): one suite, run on the memory, SQLite and Redis mailboxes
alike, Redis both on one server and on a three-primary cluster. Where they legitimately
differ, the test is run on the backends declaring the trait (`tests/mailboxes/backends.py`)."""

from __future__ import annotations

import anyio
import pytest
from anyio import wait_all_tasks_blocked
from anyio.lowlevel import checkpoint
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from baton.mailboxes import Delivery, Envelope, Mailbox, new_id
from baton.mailboxes.errors import (
    InvalidMessageError,
    MailboxBlockedError,
    MailboxClosedError,
    MailboxFullError,
)
from tests.mailboxes.backends import Backend, Item, ping
from tests.mailboxes.sinks import Sink

WAIT = 5.0  # seconds any one wait of these tests may take before it counts as hung


def ids(items: list[Envelope] | list[Delivery]) -> list[str]:
    return [item.id if isinstance(item, Envelope) else item.envelope.id for item in items]


async def take(box: Mailbox, count: int) -> list[Delivery]:
    """Receive and ack `count` deliveries, failing if they do not come."""
    taken: list[Delivery] = []
    with anyio.fail_after(WAIT):
        for _ in range(count):
            taken.append(await box.receive())
            await box.ack(taken[-1])
    return taken


async def receive_until_closed(box: Mailbox) -> list[Delivery]:
    """Receive and ack until receive raises MailboxClosedError: what came before it."""
    taken: list[Delivery] = []
    with anyio.fail_after(WAIT):
        while True:
            try:
                delivery = await box.receive()
            except MailboxClosedError:
                return taken
            taken.append(delivery)
            await box.ack(delivery)


async def test_a_mailbox_reports_its_name_capacity_and_durability(backend: Backend) -> None:
    """name and capacity are what it was opened with; durable is the backend's trait."""
    async with backend.life() as life:
        box = life.open("inbox", capacity=3)
        assert ("inbox", 3, backend.durable) == (box.name, box.capacity, box.durable)


async def test_a_capacity_below_one_is_refused(backend: Backend) -> None:
    """A mailbox of capacity 0 is refused when it is made."""
    async with backend.life() as life:
        with pytest.raises(ValueError, match="capacity"):
            life.open(capacity=0)


async def test_messages_come_out_whole_in_send_order(backend: Backend) -> None:
    """Envelopes come out in the order they were sent, unchanged, on their first attempt."""
    sent = [ping(n) for n in range(5)]
    async with backend.life() as life:
        box = life.open()
        for envelope in sent:
            await box.send(envelope)
        received = await take(box, len(sent))
    assert sent == [delivery.envelope for delivery in received]
    assert [1] * 5 == [delivery.envelope.attempt for delivery in received]


async def test_receive_nowait_is_none_when_empty_and_never_out_of_order(backend: Backend) -> None:
    """receive_nowait gives None when nothing is waiting, and otherwise the next in order."""
    sent = [ping(n) for n in range(4)]
    async with backend.life() as life:
        box = life.open()
        empty_before = box.receive_nowait()
        for envelope in sent:
            await box.send(envelope)
        received: list[Delivery] = []
        for _ in sent:
            received.append(box.receive_nowait() or await box.receive())
            await box.ack(received[-1])
        empty_after = box.receive_nowait()
    assert (None, None) == (empty_before, empty_after)
    assert ids(sent) == ids(received)


async def test_a_full_mailbox_parks_send_until_a_message_is_taken(backend: Backend) -> None:
    """At capacity a send waits (the backpressure); each message received and acked lets the
    next one in, and every one arrives once, in order."""
    sent: list[int] = []
    second_sent = anyio.Event()
    async with backend.life() as life:
        box = life.open(capacity=1)

        async def producer() -> None:
            for n in range(4):
                await box.send(ping(n))
                sent.append(n)
                if n == 1:
                    second_sent.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(producer)
            await wait_all_tasks_blocked()
            # Nothing makes room: the second send must still be waiting after a while.
            with anyio.move_on_after(0.1):
                await second_sent.wait()
            parked = list(sent)
            received = await take(box, 4)
    assert [0] == parked
    assert [0, 1, 2, 3] == sent
    assert [0, 1, 2, 3] == [delivery.envelope.payload.n for delivery in received]


async def test_nack_with_requeue_redelivers_first(backend: Backend) -> None:
    """A requeued delivery counts as waiting again and comes back, the same message, before
    the messages sent after it."""
    first, second = ping(1), ping(2)
    async with backend.life() as life:
        box = life.open()
        await box.send(first)
        await box.send(second)
        await box.nack(await box.receive(), requeue=True, reason="try again")
        depth = box.depth()
        received = await take(box, 2)
    assert 2 == depth
    assert [first.id, second.id] == ids(received)
    assert first.payload == received[0].envelope.payload


async def test_a_requeued_delivery_comes_back_one_attempt_later(backend: Backend) -> None:
    """A delivery requeued on its first attempt is handed out again on its second."""
    async with backend.life() as life:
        box = life.open()
        await box.send(ping(1))
        first = await box.receive()
        await box.nack(first, requeue=True, reason="try again")
        again = await take(box, 1)
    assert [(first.envelope.id, 2)] == [(d.envelope.id, d.envelope.attempt) for d in again]


async def test_nack_without_requeue_dead_letters_with_the_reason(backend: Backend) -> None:
    """A nack without requeue hands the envelope and the reason to the dead-letter sink, and
    the next message is delivered next."""
    sink = Sink()
    bad, good = ping(1), ping(2)
    async with backend.life() as life:
        box = life.open(sink=sink)
        await box.send(bad)
        await box.send(good)
        await box.nack(await box.receive(), requeue=False, reason="bad input")
        depth = box.depth()
        after = await take(box, 1)
    assert [(bad.id, "bad input")] == [(envelope.id, reason) for envelope, reason in sink.letters]
    assert (1, [good.id]) == (depth, ids(after))


async def test_depth_counts_the_waiting_not_the_one_in_hand(backend: Backend) -> None:
    """depth counts messages waiting; one received is no longer counted, acked or not."""
    async with backend.life() as life:
        box = life.open()
        depths = [box.depth()]
        for n in range(3):
            await box.send(ping(n))
        depths.append(box.depth())
        in_hand = await box.receive()
        depths.append(box.depth())
        await box.ack(in_hand)
        depths.append(box.depth())
        await take(box, 2)
        depths.append(box.depth())
    assert [0, 3, 2, 2, 0] == depths


async def test_close_refuses_sends_and_loses_nothing_queued(backend: Backend) -> None:
    """After close a send raises MailboxClosedError, and receive does once it has nothing
    more to hand out; what was queued is handed out then or (durable) at the next start."""
    sent = [ping(n) for n in range(3)]
    async with backend.life() as life:
        box = life.open()
        for envelope in sent:
            await box.send(envelope)
        before = await take(box, 1)
        await box.close()
        with pytest.raises(MailboxClosedError):
            await box.send(ping(9))
        after = await receive_until_closed(box)
    async with backend.life() as life:
        box = life.open()
        later = await take(box, len(sent) - len(before) - len(after))
        depth = box.depth()
    assert ids(sent) == ids([*before, *after, *later])
    assert 0 == depth


async def test_close_leaves_the_whole_queue_receivable(draining_backend: Backend) -> None:
    """After close, receive hands out everything queued, in order, then raises closed."""
    sent = [ping(n) for n in range(3)]
    async with draining_backend.life() as life:
        box = life.open()
        for envelope in sent:
            await box.send(envelope)
        await box.close()
        drained = await receive_until_closed(box)
    assert ids(sent) == ids(drained)


async def test_close_wakes_a_waiting_receiver(backend: Backend) -> None:
    """A receiver waiting on an empty mailbox is released by close with MailboxClosedError."""
    outcome: list[str] = []
    handled = anyio.Event()
    async with backend.life() as life:
        box = life.open()

        async def receiver() -> None:
            # Straight from an ack into the next receive: by the time `handled` is seen, that
            # receive is waiting (on Redis, in XREADGROUP), not still on its way there.
            await box.ack(await box.receive())
            handled.set()
            try:
                await box.receive()
            except MailboxClosedError:
                outcome.append("closed")

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(receiver)
                await box.send(ping(1))
                await handled.wait()
                await wait_all_tasks_blocked()
                await box.close()
    assert ["closed"] == outcome


async def test_drain_nowait_closes_for_good_and_loses_nothing(backend: Backend) -> None:
    """drain_nowait closes the mailbox to sends and receives; what it does not hand back,
    the next start delivers: all of it, in order, the requeued message first."""
    sent = [ping(n) for n in range(3)]
    async with backend.life() as life:
        box = life.open()
        for envelope in sent:
            await box.send(envelope)
        await box.nack(await box.receive(), requeue=True, reason="retry")
        drained = box.drain_nowait()
        with pytest.raises(MailboxClosedError):
            await box.send(ping(9))
        with anyio.fail_after(WAIT), pytest.raises(MailboxClosedError):
            await box.receive()
    async with backend.life() as life:
        box = life.open()
        later = await take(box, len(sent) - len(drained))
        depth = box.depth()
    assert ids(sent) == ids([*drained, *[delivery.envelope for delivery in later]])
    assert 0 == depth


senders = st.lists(st.lists(st.integers(0, 2), max_size=10), min_size=1, max_size=4)
"""Each sender's messages, as the yields it makes after sending each."""


@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    # One backend serves every example; each example opens a life and a mailbox of its own.
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    plans=senders,
    capacity=st.integers(1, 4),
    requeued=st.frozensets(st.tuples(st.integers(0, 3), st.integers(0, 9))),
)
async def test_concurrent_senders_lose_and_duplicate_nothing(
    backend: Backend,
    plans: list[list[int]],
    capacity: int,
    requeued: frozenset[tuple[int, int]],
) -> None:
    """Senders at once through a small mailbox, some deliveries requeued once: every
    message is acked exactly once, each sender's in the order it sent them."""
    total = sum(len(plan) for plan in plans)
    acked: list[tuple[int, int]] = []
    async with backend.life() as life:
        box = life.open(f"box-{new_id()}", capacity=capacity)

        async def sender(index: int, plan: list[int]) -> None:
            for seq, yields in enumerate(plan):
                await box.send(Envelope("box", Item(sender=index, seq=seq)))
                for _ in range(yields):
                    await checkpoint()

        async def consumer() -> None:
            retried: set[tuple[int, int]] = set()
            while len(acked) < total:
                delivery = await box.receive()
                item = delivery.envelope.payload
                key = (item.sender, item.seq)
                if key in requeued and key not in retried:
                    retried.add(key)
                    await box.nack(delivery, requeue=True, reason="again")
                else:
                    acked.append(key)
                    await box.ack(delivery)

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(consumer)
                for index, plan in enumerate(plans):
                    tg.start_soon(sender, index, plan)
        left = (box.depth(), box.receive_nowait())
    expected = sorted((index, seq) for index, plan in enumerate(plans) for seq in range(len(plan)))
    assert expected == sorted(acked)
    for index, plan in enumerate(plans):
        assert list(range(len(plan))) == [seq for sender, seq in acked if sender == index]
    assert (0, None) == left


async def test_send_nowait_queues_until_full_then_raises_full(volatile_backend: Backend) -> None:
    """Without durability send_nowait queues at once while there is room, and at capacity
    raises MailboxFullError naming the capacity."""
    sent = [ping(1), ping(2)]
    async with volatile_backend.life() as life:
        box = life.open(capacity=2)
        for envelope in sent:
            box.send_nowait(envelope)
        with pytest.raises(MailboxFullError) as caught:
            box.send_nowait(ping(3))
        depth = box.depth()
        received = await take(box, 2)
    assert (2, 2) == (caught.value.capacity, depth)
    assert ids(sent) == ids(received)


async def test_send_nowait_is_refused_and_stores_nothing(durable_backend: Backend) -> None:
    """A durable mailbox refuses every send_nowait with MailboxBlockedError, asking for
    `await send()`: a message counts as sent only once stored. Nothing is stored."""
    marker = ping(2)
    async with durable_backend.life() as life:
        box = life.open()
        with pytest.raises(MailboxBlockedError, match=r"await send\(\)") as caught:
            box.send_nowait(ping(1))
        await box.send(marker)
        depth = box.depth()
        received = await take(box, 1)
    assert MailboxBlockedError is type(caught.value)
    assert (1, [marker.id]) == (depth, ids(received))


async def test_a_payload_the_codec_cannot_store_fails_the_send(durable_backend: Backend) -> None:
    """A durable mailbox stores pydantic messages only: anything else fails the send with
    InvalidMessageError, and nothing is stored."""
    marker = ping(2)
    async with durable_backend.life() as life:
        box = life.open()
        with pytest.raises(InvalidMessageError, match="pydantic"):
            await box.send(Envelope("box", {"n": 1}))
        await box.send(marker)
        depth = box.depth()
        received = await take(box, 1)
    assert (1, [marker.id]) == (depth, ids(received))


async def test_the_next_start_delivers_what_was_not_acked(durable_backend: Backend) -> None:
    """After a restart the message in hand comes back one attempt later, the unread one as
    it was sent; acked and dead-lettered ones do not come back."""
    sent = [ping(n) for n in range(4)]
    async with durable_backend.life() as life:
        box = life.open(sink=Sink())
        for envelope in sent:
            await box.send(envelope)
        await take(box, 1)
        await box.nack(await box.receive(), requeue=False, reason="bad input")
        await box.receive()  # in hand when the process dies
    async with durable_backend.life() as life:
        box = life.open()
        again = await take(box, 2)
        depth = box.depth()
    assert [sent[2].retried(), sent[3]] == [delivery.envelope for delivery in again]
    assert 0 == depth


async def test_an_envelope_sent_again_with_a_known_id_is_dropped(
    durable_backend: Backend,
) -> None:
    """An envelope sent again while queued, after it was acked, or after a restart, is
    dropped: it is handled once."""
    message, marker, later_marker = ping(1), ping(2), ping(3)
    async with durable_backend.life() as life:
        box = life.open()
        await box.send(message)
        await box.send(message)
        first = await take(box, 1)
        await box.send(message)
        await box.send(marker)
        second = await take(box, 1)
    async with durable_backend.life() as life:
        box = life.open()
        await box.send(message)
        await box.send(later_marker)
        third = await take(box, 1)
        depth = box.depth()
    assert [message.id, marker.id, later_marker.id] == ids([*first, *second, *third])
    assert 0 == depth


async def test_a_message_in_hand_at_every_death_is_dead_lettered_when_out_of_attempts(
    durable_backend: Backend,
) -> None:
    """A message the process died handling max_attempts times is dead-lettered at the next
    start instead of delivered again; the message behind it is delivered."""
    sink = Sink()
    killer, survivor = ping(7), ping(8)
    async with durable_backend.life() as life:
        box = life.open(sink=sink, max_attempts=2)
        await box.send(killer)
        await box.send(survivor)
        first = await box.receive()  # the process dies handling it
    async with durable_backend.life() as life:
        second = await life.open(sink=sink, max_attempts=2).receive()  # and dies again
    async with durable_backend.life() as life:
        delivered = await take(life.open(sink=sink, max_attempts=2), 1)
    assert [(killer.id, 1), (killer.id, 2)] == [
        (delivery.envelope.id, delivery.envelope.attempt) for delivery in (first, second)
    ]
    assert [killer.id] == ids([envelope for envelope, _ in sink.letters])
    assert [survivor.id] == ids(delivered)
