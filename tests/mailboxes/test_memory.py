"""MemoryMailbox's own ways (the rules every mailbox keeps are in `test_contract.py`): the very
object sent is handed over, `receive_nowait` is its fast path, `drain_nowait` hands back
what the stopped actor left, and a receiver cancelled while it waits takes nothing with it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest
from anyio import wait_all_tasks_blocked
from anyio.lowlevel import checkpoint

from baton.mailboxes import Envelope, MemoryMailbox
from baton.mailboxes.errors import MailboxClosedError

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


async def test_the_very_object_sent_is_handed_over(boxes: Boxes) -> None:
    """No codec in memory: any payload, even an unserialisable one, arrives as the same
    object."""
    box = boxes(capacity=8)
    payload = {"lock": object()}
    await box.send(Envelope("box", payload))
    assert payload is (await box.receive()).envelope.payload


async def test_receive_nowait_hands_out_what_is_queued_a_requeued_one_first(
    boxes: Boxes,
) -> None:
    """`receive_nowait` hands out every queued envelope without waiting, a requeued one
    first, and None once they are all out."""
    box = boxes(capacity=8)
    for n in range(3):
        box.send_nowait(env(n))
    first = box.receive_nowait()
    assert first is not None
    await box.nack(first, requeue=True, reason="r")
    taken = [box.receive_nowait() for _ in range(4)]
    assert [0, 0, 1, 2, None] == [
        first.envelope.payload,
        *(None if d is None else d.envelope.payload for d in taken),
    ]


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
    assert [0, 1, 2] == [e.payload for e in box.drain_nowait()]
    assert 0 == box.depth()


async def test_a_receiver_cancelled_after_its_wake_up_passes_the_envelope_on(
    boxes: Boxes,
) -> None:
    """A waiting receiver cancelled after a send woke it, before it ran, leaves the envelope
    to the next waiting receiver instead of taking it to its grave."""
    box = boxes(capacity=8)
    first = asyncio.create_task(box.receive())
    second = asyncio.create_task(box.receive())
    await wait_all_tasks_blocked()
    box.send_nowait(env(1))  # wakes `first`, the oldest waiter
    first.cancel()
    with anyio.fail_after(5):
        delivered = await second
    assert 1 == delivered.envelope.payload
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_a_receiver_cancelled_while_it_waits_leaves_nothing_behind(boxes: Boxes) -> None:
    """A receive cancelled while the mailbox is empty leaves no waiter: the next envelope goes
    to the next receive, and a later close still ends that one."""
    box = boxes(capacity=8)
    gone = asyncio.create_task(box.receive())
    await wait_all_tasks_blocked()
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    box.send_nowait(env(1))
    with anyio.fail_after(5):
        assert 1 == (await box.receive()).envelope.payload
        waiting = asyncio.create_task(box.receive())
        await wait_all_tasks_blocked()
        await box.close()
        with pytest.raises(MailboxClosedError):
            await waiting
