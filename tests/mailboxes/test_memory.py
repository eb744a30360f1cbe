"""MemoryMailbox's own ways (the rules every mailbox keeps are in `test_contract.py`): the very
object sent is handed over, `receive_nowait` is its fast path, and `drain_nowait` hands back
what the stopped actor left."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from anyio.lowlevel import checkpoint

from baton.mailboxes import Envelope, MemoryMailbox

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
