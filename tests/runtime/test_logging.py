"""Logging: JSON lines carrying the actor and message id; secrets never printed."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from pydantic import BaseModel

from baton import Actor, Runtime, handler
from baton.runtime import configure_logging

log = structlog.get_logger(__name__)


class Shout(BaseModel):
    text: str


class Loud(Actor):
    @handler
    async def shout(self, msg: Shout) -> None:
        log.info("shouted", text=msg.text)


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """Route structlog to a buffer as JSON lines for the test, then restore the defaults."""
    buffer = io.StringIO()
    configure_logging(stream=buffer, level="debug")
    yield buffer
    structlog.reset_defaults()


def lines(buffer: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


async def test_lines_inside_a_handler_carry_actor_and_message_id(captured: io.StringIO) -> None:
    """A line logged by a handler is JSON with `actor`, a per-message `message_id` and `ts`."""
    async with Runtime.open() as rt:
        await rt.spawn("loud", Loud)
        await rt.ask("loud", Shout(text="one"))
        await rt.ask("loud", Shout(text="two"))
    shouted = [line for line in lines(captured) if line["event"] == "shouted"]
    assert ["one", "two"] == [line["text"] for line in shouted]
    assert ["loud", "loud"] == [line["actor"] for line in shouted]
    ids = [line["message_id"] for line in shouted]
    assert len(set(ids)) == 2
    assert all(line["ts"].endswith("Z") or "+00:00" in line["ts"] for line in shouted)


async def test_lines_outside_a_handler_have_no_message_id(captured: io.StringIO) -> None:
    """Lines logged outside any actor carry neither field."""
    log.info("outside")
    (line,) = lines(captured)
    assert "actor" not in line
    assert "message_id" not in line


async def test_dead_letters_are_logged_with_their_reason(captured: io.StringIO) -> None:
    """A dead-lettered message produces a `message.dead_lettered` line with the reason."""

    class Other(BaseModel):
        pass

    async with Runtime.open() as rt:
        await rt.spawn("loud", Loud)
        await rt.tell("loud", Other())
        await rt.ask("loud", Shout(text="flush"))
    (dead,) = [line for line in lines(captured) if line["event"] == "message.dead_lettered"]
    assert ("loud", "Other") == (dead["actor"], dead["message_type"])
    assert "no handler for 'Other'" in dead["reason"]


def test_api_key_is_redacted_anywhere_in_a_line(
    captured: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An API key that slips into a field, even nested, is replaced before printing."""
    secret = "sk-ant-api03-SECRETSECRETSECRET"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    log.warning("oops", header=f"x-api-key: {secret}", nested={"keys": [secret]})
    output = captured.getvalue()
    assert secret not in output
    (line,) = lines(captured)
    assert "x-api-key: [redacted]" == line["header"]
    assert {"keys": ["[redacted]"]} == line["nested"]
