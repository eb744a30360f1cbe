"""Breakpoint placement and the prefix-cache simulation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from ctx_factories import SYSTEM, TOOLS, assert_valid, tool_step

from baton.context.caching import Anchor, choose_anchors, place_breakpoints
from baton.context.conversation import Conversation
from baton.context.payload import Message, Payload
from baton.context.prompt_cache import CacheUsage, PrefixCache
from baton.context.strategy import ContextBudget
from baton.context.summarize import SummarizeStrategy
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
    assert {"type": "ephemeral", "ttl": "1h"} == marked["tools"][1]["cache_control"]
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


HOUR = {"type": "ephemeral", "ttl": "1h"}


def _controls(payload: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """Every `cache_control` of `payload`, in prompt order (tools, system, messages)."""
    found: list[tuple[str, Any]] = []
    for key in ("tools", "system"):
        for i, item in enumerate(payload.get(key) or ()):
            if "cache_control" in item:
                found.append((f"{key}.{i}", item["cache_control"]))
    for i, message in enumerate(payload["messages"]):
        for j, block in enumerate(message["content"]):
            if "cache_control" in block:
                found.append((f"messages.{i}.content.{j}", block["cache_control"]))
    return found


def test_every_breakpoint_but_the_newest_message_lives_an_hour() -> None:
    """The system prompt and the history's end get the 1-hour TTL, the last message the
    default five minutes; the request stays valid."""
    conversation = Conversation()
    for r in range(2):
        conversation.start_round(f"round {r}")
        tool_step(conversation, tools=1)
        tool_step(conversation, tools=0, text=f"round {r} done")
    conversation.start_round("round 2")
    strategy = SummarizeStrategy(ContextBudget(keep_recent_steps=1))
    payload = strategy.compose_payload(SYSTEM, TOOLS, conversation)
    last = len(payload["messages"]) - 1
    assert [
        ("system.0", HOUR),
        ("messages.3.content.0", HOUR),  # round 1's answer: the end of the folded history
        (f"messages.{last}.content.0", {"type": "ephemeral"}),
    ] == _controls(payload)
    assert_valid(payload)


def test_the_last_anchor_in_prompt_order_keeps_five_minutes() -> None:
    """Anchors given in any order: the one furthest into the prompt is the 5-minute one;
    with `lasting_ttl="5m"` every breakpoint is the plain 5-minute default."""
    payload: Payload = {"max_tokens": 10, "messages": _messages(3), "tools": list(TOOLS)}
    anchors: list[Anchor | None] = [("message", 2, 0), ("tool", 1), None, ("message", 0, 0)]
    assert [
        ("tools.1", HOUR),
        ("messages.0.content.0", HOUR),
        ("messages.2.content.0", {"type": "ephemeral"}),
    ] == _controls(place_breakpoints(payload, anchors))
    assert [
        ("tools.1", {"type": "ephemeral"}),
        ("messages.0.content.0", {"type": "ephemeral"}),
        ("messages.2.content.0", {"type": "ephemeral"}),
    ] == _controls(place_breakpoints(payload, anchors, lasting_ttl="5m"))


def test_a_one_hour_breakpoint_after_a_five_minute_one_is_refused() -> None:
    """The API's rule, checked in prompt order (tools → system → messages): 1-hour
    breakpoints first."""

    def request(tool_control: Any, system_control: Any) -> dict[str, Any]:
        return {
            "max_tokens": 10,
            "messages": _messages(1),
            "tools": [{**TOOLS[0], "cache_control": tool_control}],
            "system": [{"type": "text", "text": "sys", "cache_control": system_control}],
        }

    five = {"type": "ephemeral"}
    problems = validate_request(request(five, HOUR), require_model=False)
    assert ["system.0.cache_control"] == [p.split(":")[0] for p in problems]
    assert [] == validate_request(request(HOUR, five), require_model=False)
