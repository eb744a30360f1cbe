"""MemoryMailbox: FIFO order, capacity, backpressure, nack, close and drain."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest
from anyio import wait_all_tasks_blocked
from anyio.lowlevel import checkpoint

from baton.errors import MailboxClosedError, MailboxFullError
from baton.mailboxes import Envelope, MemoryMailbox
from baton.mailboxes.envelope import told
from tests.mailboxes.sinks import Sink

Boxes = Callable[..., MemoryMailbox]


def env(n: int) -> Envelope:
    return Envelope("box", n)


@pytest.fixture
def boxes() -> Iterator[Callable[..., MemoryMailbox]]:
    """Make mailboxes that are disposed of (closed and drained) after the test."""
    made: list[MemoryMailbox] = []

    def make(**kwargs: Any) -> MemoryMailbox:
        made.append(MemoryMailbox("box", **kwargs))
        return made[-1]

    yield make
    for box in made:
        box.drain_nowait()


async def test_receives_in_send_order(boxes: Boxes) -> None:
    """Envelopes come out in the order they went in."""
    box = boxes(capacity=8)
    for n in range(5):
        await box.send(env(n))
    received = [(await box.receive()).envelope.payload for _ in range(5)]
    assert list(range(5)) == received


async def test_send_nowait_raises_when_full(boxes: Boxes) -> None:
    """`send_nowait` on a full mailbox raises MailboxFullError naming the capacity."""
    box = boxes(capacity=2)
    box.send_nowait(env(1))
    box.send_nowait(env(2))
    with pytest.raises(MailboxFullError) as caught:
        box.send_nowait(env(3))
    assert caught.value.capacity == 2
    assert box.depth() == 2


async def test_send_waits_when_full_and_loses_nothing(boxes: Boxes) -> None:
    """A full mailbox parks `send` until there is room; every envelope arrives once."""
    box = boxes(capacity=1)
    sent: list[int] = []

    async def producer() -> None:
        for n in range(4):
            await box.send(env(n))
            sent.append(n)

    async with anyio.create_task_group() as tg:
        tg.start_soon(producer)
        await wait_all_tasks_blocked()
        assert sent == [0]  # the second send is parked: that is the backpressure
        received = [(await box.receive()).envelope.payload for _ in range(4)]
    assert received == [0, 1, 2, 3]
    assert sent == [0, 1, 2, 3]


async def test_nack_requeue_goes_to_the_front(boxes: Boxes) -> None:
    """A requeued delivery is received again before anything queued after it."""
    box = boxes(capacity=8)
    await box.send(env(1))
    await box.send(env(2))
    first = await box.receive()
    await box.nack(first, requeue=True, reason="retry")
    assert [(await box.receive()).envelope.payload for _ in range(2)] == [1, 2]


async def test_nack_without_requeue_dead_letters_with_reason(
    boxes: Callable[..., MemoryMailbox],
) -> None:
    """A nack without requeue hands the envelope and the reason to the dead-letter sink."""
    sink = Sink()
    box = boxes(capacity=8, dead_letters=sink)
    await box.send(env(7))
    delivery = await box.receive()
    await box.nack(delivery, requeue=False, reason="bad input")
    assert [(e.payload, r) for e, r in sink.letters] == [(7, "bad input")]
    assert box.depth() == 0


async def test_close_refuses_sends_but_drains_what_is_queued(
    boxes: Callable[..., MemoryMailbox],
) -> None:
    """After close, sends fail, queued envelopes still come out, then receive reports closed."""
    box = boxes(capacity=8)
    await box.send(env(1))
    await box.close()
    with pytest.raises(MailboxClosedError):
        await box.send(env(2))
    assert (await box.receive()).envelope.payload == 1
    with pytest.raises(MailboxClosedError):
        await box.receive()


async def test_close_wakes_a_parked_receiver(boxes: Boxes) -> None:
    """A receiver waiting on an empty mailbox is released by close with MailboxClosedError."""
    box = boxes(capacity=8)
    outcome: list[str] = []

    async def receiver() -> None:
        try:
            await box.receive()
        except MailboxClosedError:
            outcome.append("closed")

    async with anyio.create_task_group() as tg:
        tg.start_soon(receiver)
        await wait_all_tasks_blocked()
        await box.close()
    assert outcome == ["closed"]


async def test_drain_nowait_returns_requeued_then_queued(
    boxes: Callable[..., MemoryMailbox],
) -> None:
    """`drain_nowait` empties the mailbox, requeued envelopes first."""
    box = boxes(capacity=8)
    for n in range(3):
        await box.send(env(n))
    first = await box.receive()
    await box.nack(first, requeue=True, reason="r")
    await checkpoint()
    assert [e.payload for e in box.drain_nowait()] == [0, 1, 2]
    assert box.depth() == 0


def test_envelope_is_immutable_and_slotted() -> None:
    """An envelope cannot be changed or given new attributes; ids are unique."""
    first, second = Envelope("a", 1), Envelope("a", 1)
    with pytest.raises(AttributeError):
        first.attempt = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        first.extra = 1  # type: ignore[attr-defined]
    assert first.id != second.id
    retried = first.retried()
    assert (first.id, 2) == (retried.id, retried.attempt)


def test_a_told_envelope_is_the_envelope_the_constructor_makes() -> None:
    """`told`, the tell path's one-step constructor, gives an Envelope with every field as
    `Envelope(recipient, payload, sender)` sets it, and an id of its own."""
    made, fast = Envelope("a", "hi", "b"), told("a", "hi", "b")
    assert Envelope is type(fast)
    assert made._replace(seq=0, created_at=0.0) == fast._replace(seq=0, created_at=0.0)
    assert (made.seq + 1, made.origin) == (fast.seq, fast.origin)
    assert made.created_at <= fast.created_at


def test_capacity_must_be_positive() -> None:
    """A mailbox of capacity 0 is refused at construction."""
    with pytest.raises(ValueError, match="capacity"):
        MemoryMailbox("box", capacity=0)
