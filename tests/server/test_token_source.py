"""Every process's token-log lines read back from Redis (docs/token-log.md, "Across
processes"): two `TokenLog`s with a relay each stand for two processes of one deployment."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis
from redis.asyncio import Redis, RedisCluster

from baton.runtime.settings import RedisConfig
from baton.runtime.token_log import TokenLog
from baton.runtime.token_relay import LINE_FIELD, TokenRelay, stream_key
from baton.server._live import RunView
from baton.server._token_source import TokenSource, follow_every_process, stream_records
from baton.server.cli import main
from tests.server.test_report import call

SETTINGS = RedisConfig()


def restarted(index: int) -> dict[str, Any]:
    """The fields of an `actor.restarted` record numbered `index` (a kernel event)."""
    return {"actor": "worker", "restarts": index, "backoff_ms": 1.0, "reason": f"r{index}"}


@asynccontextmanager
async def process(client: Redis | RedisCluster, url: str, name: str) -> AsyncIterator[TokenLog]:
    """One process's token log, copied to the deployment's stream."""
    async with (
        TokenRelay.open(client, url, SETTINGS) as relay,
        TokenLog.open(None, process=name, relay=relay) as tokens,
    ):
        yield tokens


async def emit_sent(tokens: TokenLog, index: int) -> None:
    """Emit one record and wait until Redis has it."""
    tokens.emit("actor.restarted", **restarted(index))
    assert await tokens.drained()
    assert tokens.relay is not None
    assert await tokens.relay.flushed(10)


async def test_one_reader_sees_both_processes_lines_in_order(
    redis_client: Redis, redis_url: str
) -> None:
    """Lines two processes write alternately are read back by one `TokenSource` in the order
    they were written, each naming its process; `stream_records` gives the same records."""
    async with (
        process(redis_client, redis_url, "a:1") as a,
        process(redis_client, redis_url, "b:2") as b,
    ):
        for index in range(1, 7):
            await emit_sent(a if index % 2 else b, index)
    async with TokenSource.open(redis_url) as source:
        lines = [json.loads(line) async for _, line in source.history()]
        last = [json.loads(line)["restarts"] async for _, line in source.history(last=2)]
    records = [record async for record in stream_records(redis_url)]
    expected = [(index, "a:1" if index % 2 else "b:2") for index in range(1, 7)]
    assert expected == [(line["restarts"], line["process"]) for line in lines]
    assert lines == records
    assert [5, 6] == last


async def test_following_sees_the_other_processes_lines_and_its_own_once(
    redis_client: Redis, redis_url: str
) -> None:
    """A follower of process A receives what process B emits from then on (through Redis),
    and A's own record once, not again from the stream."""
    async with (
        process(redis_client, redis_url, "a:1") as a,
        process(redis_client, redis_url, "b:2") as b,
    ):
        await emit_sent(b, 1)  # before the follow: not sent to it
        async with follow_every_process(a) as records:
            await a.wait_followers()
            await emit_sent(b, 2)
            await emit_sent(a, 3)
            await emit_sent(b, 4)
            seen: list[tuple[int, str]] = []
            with anyio.fail_after(10):
                while len(seen) < 3:
                    record = await records.receive()
                    seen.append((record["restarts"], record["process"]))
            await anyio.wait_all_tasks_blocked()
            extra = records.statistics().current_buffer_used
    assert [(2, "b:2"), (3, "a:1"), (4, "b:2")] == sorted(seen)
    assert 0 == extra


async def test_a_cluster_takes_the_stream_on_its_hash_tag(
    redis_cluster_client: RedisCluster, redis_cluster_url: str
) -> None:
    """On a Redis Cluster the relay writes `{baton:tokens}` and a reader opened on one node's
    URL reads it back."""
    async with AsyncExitStack() as stack:
        tokens = await stack.enter_async_context(
            process(redis_cluster_client, redis_cluster_url, "a:1")
        )
        await emit_sent(tokens, 1)
    assert "{baton:tokens}" == stream_key("baton")
    records = [record async for record in stream_records(redis_cluster_url)]
    assert [(1, "a:1")] == [(record["restarts"], record["process"]) for record in records]


def add_lines(url: str, lines: list[dict[str, Any]]) -> None:
    """Put lines in the stream as the processes' relays do."""
    with redis.Redis.from_url(url) as client:
        for line in lines:
            client.xadd(stream_key("baton"), {LINE_FIELD: json.dumps(line)})


def line(index: int, process_name: str) -> dict[str, Any]:
    return {
        "ts": f"2026-11-23T22:00:0{index}Z",
        "event": "actor.restarted",
        "process": process_name,
        **restarted(index),
    }


def test_tail_with_a_redis_mailbox_prints_every_process_lines(
    redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`baton tail --mailbox URL --json` prints the stream's lines of both processes, in
    order, from a workspace that holds no token log; `-n 2` the last two."""
    add_lines(redis_url, [line(1, "a:1"), line(2, "b:2"), line(3, "a:1")])
    ws = ["--workspace", str(tmp_path), "--mailbox", redis_url, "--json"]
    every = main(["tail", *ws])
    printed = [json.loads(text)["process"] for text in capsys.readouterr().out.splitlines()]
    last = main(["tail", *ws, "-n", "2"])
    latest = [json.loads(text)["restarts"] for text in capsys.readouterr().out.splitlines()]
    assert (0, ["a:1", "b:2", "a:1"]) == (every, printed)
    assert (0, [2, 3]) == (last, latest)


def test_tail_mailbox_must_be_redis(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`baton tail --mailbox sqlite` exits 2 with one line asking for a redis:// URL."""
    code = main(["tail", "--mailbox", "sqlite", "--workspace", str(tmp_path)])
    err = capsys.readouterr().err
    assert (2, 1) == (code, len(err.splitlines()))
    assert "give redis://HOST:PORT/DB" in err


class Printed(io.StringIO):
    """What the view prints, with an event set at each write."""

    def __init__(self) -> None:
        super().__init__()
        self.written = anyio.Event()

    def write(self, text: str) -> int:
        self.written.set()
        return super().write(text)


async def test_the_live_view_counts_the_other_processes_records(
    redis_client: Redis, redis_url: str, tmp_path: Path
) -> None:
    """`baton run`'s view, following process A, counts and prints a restart process B emits."""
    out = Printed()
    view = RunView(out, workspace=tmp_path, live=False)
    async with (
        process(redis_client, redis_url, "a:1") as a,
        process(redis_client, redis_url, "b:2") as b,
        view.following(a),
    ):
        await a.wait_followers()
        with view.showing():
            await emit_sent(b, 1)
            with anyio.fail_after(10):
                await out.written.wait()
    assert 1 == view.tally.restarts
    assert out.getvalue().endswith(" worker restarted (r1)\n")


def test_report_with_a_redis_mailbox_draws_every_process_calls(
    redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`baton report --mailbox URL` draws the calls of the scheduler's host and of a worker
    from the shared stream, in a workspace whose own token log holds only the scheduler's
    call: both lanes are on the page, where the file alone would draw one."""
    scheduler_call = {**call("2026-11-23T22:00:01Z", "scheduler"), "process": "a:1"}
    worker_call = {**call("2026-11-23T22:00:02Z", "execute"), "process": "b:2"}
    add_lines(redis_url, [scheduler_call, worker_call])
    logs = tmp_path / ".baton" / "logs"
    logs.mkdir(parents=True)
    (logs / "tokens.jsonl").write_text(json.dumps(scheduler_call) + "\n", encoding="utf-8")
    pages = {}
    for name, extra in (("file", []), ("stream", ["--mailbox", redis_url])):
        out = tmp_path / f"{name}.html"
        args = ["report", "--workspace", str(tmp_path), "--out", str(out), *extra]
        assert 0 == main(args), capsys.readouterr().err
        pages[name] = out.read_text(encoding="utf-8")
    lanes = {name: (">execute<" in page, ">scheduler<" in page) for name, page in pages.items()}
    assert {"file": (False, True), "stream": (True, True)} == lanes


def test_report_mailbox_must_be_redis(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`baton report --mailbox sqlite` exits 2 with one line naming report and redis://."""
    code = main(["report", "--mailbox", "sqlite", "--workspace", str(tmp_path)])
    err = capsys.readouterr().err
    assert (2, 1) == (code, len(err.splitlines()))
    assert "report reads the token-log stream" in err
