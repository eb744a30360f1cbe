"""`PrefixCache` with 1-hour breakpoints: how a write splits and is billed, and how long the
entries live."""

from __future__ import annotations

import pytest

from baton.context.payload import CacheControl, Message, Payload
from baton.context.prompt_cache import CacheUsage, PrefixCache
from baton.context.tokens import estimate_payload_tokens

HOUR: CacheControl = {"type": "ephemeral", "ttl": "1h"}
FIVE: CacheControl = {"type": "ephemeral"}
MINUTE = 60.0


class Clock:
    """Simulated seconds, moved by the test."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _message(role: str, text: str, control: CacheControl | None = None) -> Message:
    block = {"type": "text", "text": text}
    if control is not None:
        block["cache_control"] = control  # type: ignore[assignment]
    return {"role": role, "content": [block]}  # type: ignore[typeddict-item,list-item]


def _payload(first: CacheControl | None = HOUR, words: int = 2000) -> tuple[Payload, int]:
    """Three messages: a breakpoint after the first (`first`), a 5-minute one on the last;
    and the tokens up to the first breakpoint."""
    head: Payload = {"max_tokens": 1, "messages": [_message("user", "a " * words, first)]}
    payload: Payload = {
        "max_tokens": 1,
        "messages": [
            *head["messages"],
            _message("assistant", "b " * 2000),
            _message("user", "c " * 2000, FIVE),
        ],
    }
    return payload, estimate_payload_tokens(head)


def test_the_part_up_to_the_hour_breakpoint_is_written_for_an_hour_at_twice_input() -> None:
    """A cold request writes everything: the prefix up to the 1-hour breakpoint at 2x, the
    rest up to the 5-minute one at 1.25x. A prefix too short to cache is no 1-hour write."""
    payload, hour = _payload()
    total = estimate_payload_tokens(payload)
    charge = PrefixCache(clock=Clock()).usage_for(payload)
    assert CacheUsage(0, total, 0, cache_creation_1h_input_tokens=hour) == charge
    assert total - hour == charge.cache_creation_5m_input_tokens
    assert pytest.approx(2 * hour + 1.25 * (total - hour)) == charge.billed
    short, _ = _payload(words=10)
    charge = PrefixCache(clock=Clock()).usage_for(short)
    assert (0, 1.25 * charge.total) == (charge.cache_creation_1h_input_tokens, charge.billed)


def test_after_a_wait_of_minutes_the_hour_entry_is_read_and_after_an_hour_nothing() -> None:
    """Ten minutes on, the 5-minute entry is gone and the 1-hour one read; 61 minutes after
    that read, both are gone."""
    clock = Clock()
    cache = PrefixCache(clock=clock)
    payload, hour = _payload()
    total = estimate_payload_tokens(payload)
    cache.usage_for(payload)
    clock.now = 10 * MINUTE
    assert CacheUsage(0, total - hour, hour) == cache.usage_for(payload)
    clock.now += 61 * MINUTE
    assert CacheUsage(0, total, 0, cache_creation_1h_input_tokens=hour) == cache.usage_for(payload)


def test_an_hour_entry_read_within_a_longer_prefix_lives_an_hour_from_that_read() -> None:
    """Requests every 4 minutes read the longer 5-minute prefix; they use the 1-hour part
    too, so it lives on: ten minutes after the last of them, 67 minutes after it was
    written, it is still read."""
    clock = Clock()
    cache = PrefixCache(clock=clock)
    payload, hour = _payload()
    total = estimate_payload_tokens(payload)
    for minute in range(0, 57, 4):
        clock.now = minute * MINUTE
        cache.usage_for(payload)
    assert CacheUsage(0, 0, total) == cache.usage_for(payload)  # the 5-minute entry, alive
    clock.now += 10 * MINUTE
    assert CacheUsage(0, total - hour, hour) == cache.usage_for(payload)
