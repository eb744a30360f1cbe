"""Mailbox throughput: two baton actors against two plain tasks over asyncio.Queue, one run.

Run: python bench/mailbox.py [--messages N] [--repeats R]
Prints ask round trips/s and tell messages/s between a sender and a receiver, for baton
actors and for the same two patterns over `asyncio.Queue`, with baton's ratio to that
baseline (goal: both >= 0.5). Each figure is the best of R repeats, to damp scheduler noise;
the issue's report is the median of three such runs.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

import structlog
from pydantic import BaseModel

from baton import Actor, ActorRef, Runtime, handler


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
        start = time.perf_counter()
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
        start = await sender.ask(Go(count=n, ask=ask), timeout=None)
        await finished.wait()
        return n / (time.perf_counter() - start)


async def baton_ask(n: int) -> float:
    return await baton_pattern(n, ask=True)


async def baton_tell(n: int) -> float:
    return await baton_pattern(n, ask=False)


async def queue_ask(n: int) -> float:
    queue: asyncio.Queue[tuple[Ping, asyncio.Future[Ping]]] = asyncio.Queue(1024)

    async def server() -> None:
        while True:
            msg, fut = await queue.get()
            fut.set_result(msg)

    loop = asyncio.get_running_loop()
    task = loop.create_task(server())
    ping = Ping(n=1)
    start = time.perf_counter()
    for _ in range(n):
        fut: asyncio.Future[Ping] = loop.create_future()
        await queue.put((ping, fut))
        await fut
    rate = n / (time.perf_counter() - start)
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
    start = time.perf_counter()
    for _ in range(n):
        await queue.put(ping)
    await finished.wait()
    rate = n / (time.perf_counter() - start)
    task.cancel()
    return rate


async def best(fn: Callable[[int], Awaitable[float]], n: int, repeats: int) -> float:
    return max([await fn(n) for _ in range(repeats)])


async def main(n: int, repeats: int) -> None:
    results = {
        "ask": (await best(baton_ask, n, repeats), await best(queue_ask, n, repeats)),
        "tell": (await best(baton_tell, n, repeats), await best(queue_tell, n, repeats)),
    }
    print(f"{'pattern':<8}{'baton/s':>14}{'asyncio.Queue/s':>18}{'ratio':>8}")
    for pattern, (ours, baseline) in results.items():
        print(f"{pattern:<8}{ours:>14,.0f}{baseline:>18,.0f}{ours / baseline:>8.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    # Lifecycle lines would only clutter the table.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(main(args.messages, args.repeats))
