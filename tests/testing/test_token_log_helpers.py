"""baton.testing's token-log helpers: capture_token_log() and read_token_log()."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from baton import Actor, Runtime
from baton.runtime.token_log import TOKEN_LOG, TokenLog, capture_sinks
from baton.testing import capture_token_log, read_token_log


class Idle(Actor):
    pass


class Stray(BaseModel):
    n: int


def model_call(turn: int) -> dict[str, Any]:
    return {
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


async def dead_letter_strays(rt: Runtime, *numbers: int) -> None:
    """Tell an actor with no handlers one `Stray` per number: each is dead-lettered."""
    await rt.spawn("idle", Idle)
    for n in numbers:
        await rt.tell("idle", Stray(n=n))


async def test_capture_sees_a_workspace_runtime_records_in_order(tmp_path: Path) -> None:
    """A workspace runtime's records are captured in order, as written to its file."""
    with capture_token_log() as records:
        async with Runtime.open(tmp_path) as rt:
            await dead_letter_strays(rt, 1, 2, 3)
    assert [("message.dead_lettered", "idle", "Stray")] * 3 == [
        (r["event"], r["actor"], r["message_type"]) for r in records
    ]
    assert records == read_token_log(tmp_path)


async def test_capture_sees_a_memory_runtime_that_writes_no_file() -> None:
    """A runtime without a workspace writes no file, yet its records are captured."""
    with capture_token_log() as records:
        async with Runtime.open() as rt:
            await dead_letter_strays(rt, 1, 2)
    assert (None, ["message.dead_lettered", "message.dead_lettered"]) == (
        rt.token_log.path,
        [r["event"] for r in records],
    )


async def test_captured_records_are_validated_dicts_with_a_timestamp() -> None:
    """Each captured record carries `ts` and the schema's defaults, and bad records are absent."""
    with capture_token_log() as records:
        async with TokenLog.open(None) as tokens:
            tokens.emit("model.call", **model_call(1))
            tokens.emit("model.call", turn=2)  # misses required fields: dropped
    (record,) = records
    assert ("model.call", 1, "turn", "off", True) == (
        record["event"],
        record["turn"],
        record["purpose"],
        record["thinking"],
        record["ts"].endswith("Z"),
    )


async def test_capture_stops_when_the_block_ends() -> None:
    """Records emitted after the block are not added, and no sink is left behind."""
    async with TokenLog.open(None) as tokens:
        with capture_token_log() as records:
            tokens.emit("model.call", **model_call(1))
        tokens.emit("model.call", **model_call(2))
    assert ([1], []) == ([r["turn"] for r in records], capture_sinks)


async def test_captures_nest() -> None:
    """An inner block sees what was emitted inside it; the outer sees everything in its span."""
    async with TokenLog.open(None) as tokens:
        with capture_token_log() as outer:
            with capture_token_log() as empty:  # ends equal to `outer`: it must end alone
                pass
            tokens.emit("model.call", **model_call(1))
            with capture_token_log() as inner:
                tokens.emit("model.call", **model_call(2))
            tokens.emit("model.call", **model_call(3))
    assert ([1, 2, 3], [2], []) == (
        [r["turn"] for r in outer],
        [r["turn"] for r in inner],
        empty,
    )


async def test_read_sees_rotated_files_oldest_first_and_matches_capture(tmp_path: Path) -> None:
    """Rotated files are read oldest first, then the current one: the records capture saw."""
    path = tmp_path / "tokens.jsonl"
    with capture_token_log() as records:
        async with TokenLog.open(path, max_bytes=1024, backups=50) as tokens:
            for turn in range(40):
                tokens.emit("model.call", **model_call(turn))
    rotated = sorted(tmp_path.glob("tokens.jsonl.*"))  # noqa: ASYNC240 - the log is closed
    assert (True, list(range(40))) == (
        len(rotated) > 10,  # so `.10` sorts before `.2` by name, not by number
        [r["turn"] for r in read_token_log(path)],
    )
    assert records == read_token_log(path)


def test_read_takes_a_workspace_and_skips_torn_lines_only_when_asked(tmp_path: Path) -> None:
    """A workspace means its `.baton/logs/tokens.jsonl`; a torn line raises unless skipped."""
    path = tmp_path / TOKEN_LOG
    path.parent.mkdir(parents=True)
    path.write_text('{"event": "model.call", "turn": 1}\n{"event": "mod\n\n{"turn": 2}\n')
    assert [{"event": "model.call", "turn": 1}, {"turn": 2}] == read_token_log(
        tmp_path, skip_torn=True
    )
    with pytest.raises(ValueError, match=r"tokens\.jsonl:2 is not a JSON record"):
        read_token_log(tmp_path)


def test_read_without_a_log_raises_file_not_found(tmp_path: Path) -> None:
    """A workspace that never held a token log is an error, not an empty list."""
    with pytest.raises(FileNotFoundError, match="no token log"):
        read_token_log(tmp_path)
