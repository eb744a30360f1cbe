"""Redis mailbox throughput: baton's RedisMailbox against raw redis-py stream commands.

Run: .venv/bin/python bench/redis_mailbox.py [--messages N] [--batched-messages M] [--repeats R]
Starts its own redis-server (tests/redis_server.py), then measures tell throughput,
messages/s for "send N, then receive and ack all N", at two batch sizes:

- batch 1: raw is one XADD per message, XREADGROUP COUNT 1, one XACK per message; baton is
  one `send`, one `receive` (read_batch=1) and one `ack` per message.
- batch 100: raw pipelines 100 XADDs, reads with COUNT 100 and XACKs 100 ids at once; baton
  uses `send_many` of 100, read_batch=100, and `ack_many` of 100.

Both sides carry the same pydantic payload: raw serialises it with `model_dump_json` and
validates it back with `model_validate_json`; baton goes through its `EnvelopeCodec`. Baton
does more per message on purpose (dedupe marker, capacity check, XDEL on ack): that is what
the ratio prices. Each figure is the median of R repetitions, baton and raw interleaved.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import logging
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType

import structlog
from pydantic import BaseModel
from redis.asyncio import Redis

from baton.mailboxes import Delivery, Envelope
from baton.mailboxes.codec import EnvelopeCodec
from baton.mailboxes.redis import RedisMailbox

GOAL = 0.7
BATCH = 100


class Ping(BaseModel):
    n: int
    text: str


CODEC = EnvelopeCodec({"Ping": Ping})


def load_server_helper() -> ModuleType:
    """tests/redis_server.py, imported by path: the tests are not a package."""
    path = Path(__file__).resolve().parents[1] / "tests" / "redis_server.py"
    spec = importlib.util.spec_from_file_location("redis_server", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def payloads(n: int) -> list[Ping]:
    return [Ping(n=i, text="a short message body") for i in range(n)]


async def baton_run(client: Redis, run: str, n: int, batch: int) -> float:
    box = RedisMailbox(
        run,
        client=client,
        codec=CODEC,
        capacity=n,
        dead_letters=None,
        consumer="bench",
        read_batch=batch,
    )
    pings = payloads(n)
    start = time.perf_counter()
    if batch == 1:
        for ping in pings:
            await box.send(Envelope(run, ping))
        for _ in range(n):
            await box.ack(await box.receive())
    else:
        for first in range(0, n, batch):
            await box.send_many([Envelope(run, ping) for ping in pings[first : first + batch]])
        received = 0
        while received < n:
            deliveries: list[Delivery] = [await box.receive()]
            while len(deliveries) < batch and (more := box.receive_nowait()) is not None:
                deliveries.append(more)
            await box.ack_many(deliveries)
            received += len(deliveries)
    elapsed = time.perf_counter() - start
    box.drain_nowait()
    return n / elapsed


async def raw_run(client: Redis, run: str, n: int, batch: int) -> float:
    stream, group = f"raw:{run}", run
    await client.xgroup_create(stream, group, id="0", mkstream=True)
    pings = payloads(n)
    start = time.perf_counter()
    if batch == 1:
        for ping in pings:
            await client.xadd(stream, {"e": ping.model_dump_json()})
        for _ in range(n):
            reply = await client.xreadgroup(group, "bench", {stream: ">"}, count=1, block=1000)
            entry_id, fields = reply[0][1][0]
            Ping.model_validate_json(fields[b"e"])
            await client.xack(stream, group, entry_id)
    else:
        for first in range(0, n, batch):
            async with client.pipeline(transaction=False) as pipe:
                for ping in pings[first : first + batch]:
                    pipe.xadd(stream, {"e": ping.model_dump_json()})
                await pipe.execute()
        received = 0
        while received < n:
            reply = await client.xreadgroup(group, "bench", {stream: ">"}, count=batch, block=1000)
            entries = reply[0][1]
            for _, fields in entries:
                Ping.model_validate_json(fields[b"e"])
            await client.xack(stream, group, *[entry_id for entry_id, _ in entries])
            received += len(entries)
    return n / (time.perf_counter() - start)


Runner = Callable[[Redis, str, int, int], Awaitable[float]]


async def median_rates(client: Redis, n: int, batch: int, repeats: int) -> tuple[float, float]:
    rates: dict[str, list[float]] = {"baton": [], "raw": []}
    runners: dict[str, Runner] = {"baton": baton_run, "raw": raw_run}
    for repeat in range(repeats):
        for side, runner in runners.items():
            await client.flushall()
            rates[side].append(await runner(client, f"b{batch}r{repeat}{side}", n, batch))
    return statistics.median(rates["baton"]), statistics.median(rates["raw"])


async def main(url: str, n: int, batched: int, repeats: int) -> None:
    client = Redis.from_url(url)
    try:
        # One untimed pass of each, so script loading and connection setup are not measured.
        await median_rates(client, 200, 1, 1)
        await median_rates(client, 1000, BATCH, 1)
        rows = [
            (f"tell, batch 1 ({n:,} msgs)", *await median_rates(client, n, 1, repeats)),
            (
                f"tell, batch {BATCH} ({batched:,} msgs)",
                *await median_rates(client, batched, BATCH, repeats),
            ),
        ]
    finally:
        await client.aclose()
    print(f"median of {repeats} repetitions; goal: baton/raw >= {GOAL}")
    print(f"{'pattern':<28}{'baton msg/s':>13}{'raw msg/s':>13}{'ratio':>8}  goal")
    for pattern, ours, raw in rows:
        ratio = ours / raw
        verdict = "met" if ratio >= GOAL else "NOT met"
        print(f"{pattern:<28}{ours:>13,.0f}{raw:>13,.0f}{ratio:>8.2f}  {verdict}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=3_000, help="per run, batch 1")
    parser.add_argument("--batched-messages", type=int, default=30_000, help="per run, batch 100")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    logging.getLogger("asyncio").setLevel(logging.WARNING)
    started = time.perf_counter()
    with load_server_helper().running_redis() as server:
        asyncio.run(main(server.url, args.messages, args.batched_messages, args.repeats))
    print(f"total {time.perf_counter() - started:.1f}s")
