"""Breakpoint placement and the prefix-cache simulation."""

from __future__ import annotations

import pytest
from ctx_factories import TOOLS

from baton.context.caching import choose_anchors, place_breakpoints
from baton.context.payload import Message, Payload
from baton.context.prompt_cache import CacheUsage, PrefixCache
from baton.context.tokens import estimate_payload_tokens
from baton.context.validation import validate_request


def _messages(n: int, size: int = 2000) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        out.append({"role": role, "content": [{"type": "text", "text": f"{i} " + "w" * size}]})
    return out


def test_placement_copies_only_what_it_marks() -> None:
    """The input payload and its shared blocks are never mutated."""
    messages = _messages(3)
    payload: Payload = {"max_tokens": 10, "messages": messages, "tools": list(TOOLS)}
    marked = place_breakpoints(payload, [("tool", 1), ("message", 2, 0)])
    assert "cache_control" not in messages[2]["content"][0]  # type: ignore[operator]
    assert "cache_control" not in TOOLS[1]
    assert {"type": "ephemeral"} == marked["tools"][1]["cache_control"]
    assert {"type": "ephemeral"} == marked["messages"][2]["content"][0]["cache_control"]  # type: ignore[index,typeddict-item]
    assert marked["messages"][0] is messages[0]


def test_never_more_than_four_keeping_the_prefix_and_the_last() -> None:
    """Five candidates: the middle one goes, the first and last stay."""
    anchors = [
        ("system", 0),
        ("message", 1, 0),
        ("message", 3, 0),
        ("message", 5, 0),
        ("message", 7, 0),
    ]
    assert [
        ("system", 0),
        ("message", 1, 0),
        ("message", 3, 0),
        ("message", 7, 0),
    ] == choose_anchors(
        anchors  # type: ignore[arg-type]
    )
    payload: Payload = {
        "max_tokens": 10,
        "messages": _messages(8, 10),
        "system": [{"type": "text", "text": "sys"}],
    }
    assert [] == validate_request(place_breakpoints(payload, anchors), require_model=False)  # type: ignore[arg-type]


def test_a_repeated_prefix_is_read_at_a_tenth() -> None:
    """First call writes the prefix at 1.25x; the same call again reads it at 0.1x."""
    payload = place_breakpoints({"max_tokens": 10, "messages": _messages(3)}, [("message", 2, 0)])
    total = estimate_payload_tokens(payload)
    cache = PrefixCache()
    first = cache.usage_for(payload)
    second = cache.usage_for(payload)
    assert CacheUsage(0, total, 0) == first
    assert CacheUsage(0, 0, total) == second
    assert pytest.approx(total * 1.25) == first.billed
    assert pytest.approx(total * 0.1) == second.billed


def test_a_grown_conversation_reads_the_old_prefix_and_writes_the_new_part() -> None:
    """Appending messages: the previous breakpoint is found by looking back from the new one."""
    cache = PrefixCache()
    small = place_breakpoints({"max_tokens": 10, "messages": _messages(3)}, [("message", 2, 0)])
    big = place_breakpoints({"max_tokens": 10, "messages": _messages(5)}, [("message", 4, 0)])
    cache.usage_for(small)
    charge = cache.usage_for(big)
    assert estimate_payload_tokens(small) == charge.cache_read_input_tokens
    assert estimate_payload_tokens(big) == charge.total


def test_a_change_early_in_the_prefix_misses() -> None:
    """Rewriting an early message invalidates everything after it."""
    cache = PrefixCache()
    before = _messages(5)
    after = [
        {"role": "user", "content": [{"type": "text", "text": "changed " + "w" * 2000}]},
        *before[1:],
    ]
    cache.usage_for(place_breakpoints({"max_tokens": 1, "messages": before}, [("message", 4, 0)]))
    charge = cache.usage_for(
        place_breakpoints({"max_tokens": 1, "messages": after}, [("message", 4, 0)])
    )  # type: ignore[typeddict-item]
    assert 0 == charge.cache_read_input_tokens


def test_short_prefixes_are_not_cached() -> None:
    """Below the minimum cacheable length, everything is billed as uncached input."""
    payload = place_breakpoints(
        {"max_tokens": 1, "messages": _messages(1, 10)}, [("message", 0, 0)]
    )
    cache = PrefixCache()
    cache.usage_for(payload)
    charge = cache.usage_for(payload)
    assert (charge.total, 0, 0) == (
        charge.input_tokens,
        charge.cache_creation_input_tokens,
        charge.cache_read_input_tokens,
    )
