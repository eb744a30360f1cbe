"""Mailbox throughput: baton actors against plain tasks over asyncio.Queue, one run.

Run: python bench/mailbox.py [--messages N] [--repeats R] [--cpu]
Prints, for each pattern, baton's rate and the rate of the same pattern over `asyncio.Queue`
(goal: every ratio >= 0.5):

- `ask`: round trips/s from one actor to another (`ref.ask(..., timeout=None)` inside a
  handler), against a future per request over one queue;
- `ask-out`: round trips/s from outside any actor, as README.md's first example asks
  (`await ref.ask(msg, timeout=30)` in the task that opened the runtime), against a server
  task reading requests from one queue and replying on a second;
- `tell`: messages/s from one actor to another, against one queue.

Each repeat runs baton and its baseline back to back. `baton/s` and `asyncio.Queue/s` are
the best of R repeats, to damp scheduler noise, and `ratio` is theirs; `median` and `range`
are of the R per-repeat ratios, which a shared machine's load moves less than the rates.
`--cpu` times the process's CPU instead of the wall clock: everything runs on the one event
loop thread, so that is the same work for both sides, and other processes' load stays out.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import time
from collections.abc import Awaitable, Callable

import structlog
from pydantic import BaseModel

from baton import Actor, ActorRef, Runtime, handler

clock: Callable[[], float] = time.perf_counter  # `--cpu`: time.process_time


class Ping(BaseModel):
    n: int


class Go(BaseModel):
    count: int
    ask: bool


class Receiver(Actor):
    """Counts pings and replies with the ping itself: the same work the baseline does."""

    def __init__(self, expected: int, finished: asyncio.Event) -> None:
        self.count = 0
        self.expected = expected
        self.finished = finished

    @handler
    async def ping(self, msg: Ping) -> Ping:
        self.count += 1
        if self.count == self.expected:
            self.finished.set()
        return msg


class Sender(Actor):
    """On `Go`, sends `count` pings to the receiver, as tells or as asks."""

    def __init__(self, receiver: ActorRef) -> None:
        self.receiver = receiver

    @handler
    async def go(self, msg: Go) -> float:
        ping = Ping(n=1)
        receiver = self.receiver
        start = clock()
        if msg.ask:
            for _ in range(msg.count):
                await receiver.ask(ping, timeout=None)
        else:
            for _ in range(msg.count):
                await receiver.tell(ping)
        return start


async def baton_pattern(n: int, *, ask: bool) -> float:
    finished = asyncio.Event()
    async with Runtime.open() as rt:
        receiver = await rt.spawn("receiver", Receiver, n, finished)
        sender = await rt.spawn("sender", Sender, receiver)
        start: float = await sender.ask(Go(count=n, ask=ask), timeout=None)
        await finished.wait()
        return n / (clock() - start)


async def baton_ask(n: int) -> float:
    return await baton_pattern(n, ask=True)


async def baton_tell(n: int) -> float:
    return await baton_pattern(n, ask=False)


async def baton_ask_outside(n: int) -> float:
    """Asks from the task that opened the runtime, with a timeout: the public API's own use."""
    finished = asyncio.Event()
    async with Runtime.open() as rt:
        receiver = await rt.spawn("receiver", Receiver, n, finished)
        ping = Ping(n=1)
        start = clock()
        for _ in range(n):
            await receiver.ask(ping, timeout=30)
        return n / (clock() - start)


async def queue_ask(n: int) -> float:
    queue: asyncio.Queue[tuple[Ping, asyncio.Future[Ping]]] = asyncio.Queue(1024)

    async def server() -> None:
        while True:
            msg, fut = await queue.get()
            fut.set_result(msg)

    loop = asyncio.get_running_loop()
    task = loop.create_task(server())
    ping = Ping(n=1)
    start = clock()
    for _ in range(n):
        fut: asyncio.Future[Ping] = loop.create_future()
        await queue.put((ping, fut))
        await fut
    rate = n / (clock() - start)
    task.cancel()
    return rate


async def queue_request_reply(n: int) -> float:
    """A server task replying on a second queue; the client awaits each reply in turn."""
    requests: asyncio.Queue[Ping] = asyncio.Queue(1024)
    replies: asyncio.Queue[Ping] = asyncio.Queue(1024)

    async def server() -> None:
        while True:
            replies.put_nowait(await requests.get())

    task = asyncio.get_running_loop().create_task(server())
    ping = Ping(n=1)
    start = clock()
    for _ in range(n):
        await requests.put(ping)
        await replies.get()
    rate = n / (clock() - start)
    task.cancel()
    return rate


async def queue_tell(n: int) -> float:
    queue: asyncio.Queue[Ping] = asyncio.Queue(1024)
    finished = asyncio.Event()

    async def server() -> None:
        count = 0
        while True:
            await queue.get()
            count += 1
            if count == n:
                finished.set()

    task = asyncio.get_running_loop().create_task(server())
    ping = Ping(n=1)
    start = clock()
    for _ in range(n):
        await queue.put(ping)
    await finished.wait()
    rate = n / (clock() - start)
    task.cancel()
    return rate


Pattern = Callable[[int], Awaitable[float]]

PATTERNS: dict[str, tuple[Pattern, Pattern]] = {
    "ask": (baton_ask, queue_ask),
    "ask-out": (baton_ask_outside, queue_request_reply),
    "tell": (baton_tell, queue_tell),
}


async def compare(
    ours: Pattern, baseline: Pattern, n: int, repeats: int
) -> list[tuple[float, float]]:
    """(baton's rate, the baseline's rate) for each repeat, run back to back."""
    return [(await ours(n), await baseline(n)) for _ in range(repeats)]


async def main(n: int, repeats: int) -> None:
    print(
        f"{'pattern':<9}{'baton/s':>12}{'asyncio.Queue/s':>18}{'ratio':>8}"
        f"{'median':>8}{'range':>13}"
    )
    for pattern, (ours, baseline) in PATTERNS.items():
        runs = await compare(ours, baseline, n, repeats)
        best_ours = max(rate for rate, _ in runs)
        best_baseline = max(rate for _, rate in runs)
        ratios = [rate / base for rate, base in runs]
        spread = f"{min(ratios):.2f}-{max(ratios):.2f}"
        print(
            f"{pattern:<9}{best_ours:>12,.0f}{best_baseline:>18,.0f}"
            f"{best_ours / best_baseline:>8.2f}{statistics.median(ratios):>8.2f}{spread:>13}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cpu", action="store_true", help="time CPU, not the wall clock")
    args = parser.parse_args()
    if args.cpu:
        clock = time.process_time
    # Lifecycle lines would only clutter the table.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(main(args.messages, args.repeats))
