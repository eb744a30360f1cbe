"""Token log: validated JSON lines, context fields, rotation without loss, following."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio
import pytest
import structlog
from pydantic import BaseModel
from structlog.testing import capture_logs

from baton import Actor, Runtime
from baton.runtime.token_log import TOKEN_LOG, TokenLog
from baton.testing import read_token_log


class Idle(Actor):
    pass


def model_call(turn: int, **overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "model": "offline-scripted",
        "input_tokens": 10,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 5,
        "context_tokens": 15,
        "context_window": 200_000,
        "compact_threshold": 150_000,
        "fill": 15 / 200_000,
        "latency_ms": 1.5,
        "stop_reason": "end_turn",
        "turn": turn,
        "actor": "init",
    }
    fields.update(overrides)
    return fields


async def test_a_model_call_is_one_json_line_with_every_field(tmp_path: Path) -> None:
    """`model.call` is written as one line holding every field of docs/token-log.md, "Fields"."""
    path = tmp_path / "tokens.jsonl"
    async with TokenLog.open(path) as tokens:
        with structlog.contextvars.bound_contextvars(scenario="leave", conversation="c1"):
            tokens.emit("model.call", **model_call(3))
    (line,) = read_token_log(path)
    assert {
        "ts", "event", "actor", "scenario", "conversation", "process", "model", "input_tokens",
        "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens",
        "context_tokens", "context_window", "compact_threshold", "fill", "latency_ms",
        "stop_reason", "tools", "turn", "purpose", "thinking", "effort", "cost_usd",
    } == set(line)  # fmt: skip
    assert ("model.call", "init", "leave", "c1", 3) == (
        line["event"],
        line["actor"],
        line["scenario"],
        line["conversation"],
        line["turn"],
    )


async def test_an_invalid_record_is_reported_and_not_written(tmp_path: Path) -> None:
    """A record missing a required field is dropped with an error line, never half-written."""
    path = tmp_path / "tokens.jsonl"
    with capture_logs() as logs:
        async with TokenLog.open(path) as tokens:
            fields = model_call(1)
            del fields["output_tokens"]
            tokens.emit("model.call", **fields)
            tokens.emit("model.call", **model_call(2))
    assert [2] == [line["turn"] for line in read_token_log(path)]
    assert ["token_log.invalid_record"] == [e["event"] for e in logs if e["log_level"] == "error"]


async def test_rotation_keeps_every_line_whole(tmp_path: Path) -> None:
    """Past max_bytes the log rotates between lines: all records survive, none is split."""
    path = tmp_path / "tokens.jsonl"
    async with TokenLog.open(path, max_bytes=4096, backups=50) as tokens:
        for turn in range(200):
            tokens.emit("model.call", **model_call(turn))
            if turn % 7 == 0:
                await anyio.lowlevel.checkpoint()  # let the writer flush in several batches
    files = sorted(tmp_path.glob("tokens.jsonl*"))  # noqa: ASYNC240 - the log is closed
    assert len(files) > 3
    turns = sorted(line["turn"] for line in read_token_log(path))
    assert list(range(200)) == turns
    assert all(f.stat().st_size <= 4096 for f in files)


async def test_followers_receive_records_as_they_are_written() -> None:
    """`follow()` yields each record emitted after it started, in order."""
    async with TokenLog.open(None) as tokens, tokens.follow() as records:
        tokens.emit("model.call", **model_call(1))
        tokens.emit("model.call", **model_call(2))
        got = [await records.receive(), await records.receive()]
    assert [1, 2] == [r["turn"] for r in got]


async def test_runtime_events_reach_the_workspace_token_log(tmp_path: Path) -> None:
    """Dead letters are recorded in `<workspace>/.baton/logs/tokens.jsonl`."""

    class Stray(BaseModel):
        pass

    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("greeter", Idle)
        await rt.tell("greeter", Stray())
    (line,) = read_token_log(tmp_path / TOKEN_LOG)
    assert ("message.dead_lettered", "greeter", "Stray") == (
        line["event"],
        line["actor"],
        line["message_type"],
    )


@pytest.mark.parametrize("event", ["handoff.sent", "handoff.received"])
async def test_handoff_records_use_the_from_field(event: str) -> None:
    """Handoff lines carry `from` (a Python keyword) as the field name."""
    async with TokenLog.open(None) as tokens, tokens.follow() as records:
        tokens.emit(
            event,
            actor="init",
            handoff_type="init_to_execute",
            **{"from": "init"},
            to="scheduler",
            package_tokens=250,
        )
        record = await records.receive()
    assert ("init", "scheduler") == (record["from"], record["to"])


async def test_drained_returns_once_every_emitted_record_is_written(tmp_path: Path) -> None:
    """`drained()` waits for the writer: every record emitted before it is in the file."""
    path = tmp_path / "tokens.jsonl"
    async with TokenLog.open(path) as tokens:
        for turn in range(50):
            tokens.emit("model.call", **model_call(turn))
        assert await tokens.drained()
        assert list(range(50)) == [line["turn"] for line in read_token_log(path)]


async def test_a_level_filter_configured_for_structlog_drops_no_record(tmp_path: Path) -> None:
    """An application that sets structlog's level to warnings still gets every token-log
    record (they are written at info)."""
    previous = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    try:
        async with TokenLog.open(tmp_path / "tokens.jsonl") as log:
            log.emit("model.call", **model_call(1))
    finally:
        structlog.configure(**previous)
    lines = (tmp_path / "tokens.jsonl").read_text().splitlines()
    assert ["model.call"] == [json.loads(line)["event"] for line in lines]
