"""Property: whatever the senders do, every message is delivered once, in per-sender order."""

from __future__ import annotations

import anyio
from anyio.lowlevel import checkpoint
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from baton import Actor, Runtime, handler


class Item(BaseModel):
    sender: int
    seq: int
    yields: int


class Collector(Actor):
    def __init__(self, seen: list[tuple[int, int]]) -> None:
        self.seen = seen

    @handler
    async def item(self, msg: Item) -> None:
        for _ in range(msg.yields):
            await checkpoint()
        self.seen.append((msg.sender, msg.seq))


plans = st.lists(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), max_size=25),
    min_size=1,
    max_size=5,
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(plans=plans, capacity=st.integers(1, 6))
def test_every_message_arrives_exactly_once_in_per_sender_order(
    plans: list[list[tuple[int, int]]], capacity: int
) -> None:
    """K senders each tell N messages (random yields on both sides, random capacity)."""
    seen: list[tuple[int, int]] = []

    async def scenario() -> None:
        async with Runtime.open(mailbox_capacity=capacity) as rt:
            await rt.spawn("collector", Collector, seen)

            async def sender(index: int, plan: list[tuple[int, int]]) -> None:
                for seq, (sender_yields, handler_yields) in enumerate(plan):
                    await rt.tell("collector", Item(sender=index, seq=seq, yields=handler_yields))
                    for _ in range(sender_yields):
                        await checkpoint()

            async with anyio.create_task_group() as tg:
                for index, plan in enumerate(plans):
                    tg.start_soon(sender, index, plan)

    anyio.run(scenario, backend="asyncio")
    expected = sorted((i, s) for i, plan in enumerate(plans) for s in range(len(plan)))
    assert expected == sorted(seen)
    for index, plan in enumerate(plans):
        assert list(range(len(plan))) == [s for i, s in seen if i == index]
