"""Prompt-cache breakpoints: where a composed payload asks the API to cache its prefix.

Breakpoints go on the stable prefix (the last system block, or the last tool: the cache
prefix runs tools → system → messages), on the summary, at the end of a history part that
stays put while the recent part changes, and on the last message: at most four, which is
the API's limit. Placement copies only the blocks it marks; the composed pieces a
conversation caches are never mutated.

The last breakpoint (the newest message, written anew every turn) lives five minutes; the
others end parts that a conversation re-sends after it waited (for its next round, for an
approval) and that are rarely rewritten, so they live an hour: a write then costs 2x input
instead of 1.25x, but a wait of up to an hour reads them back at 0.1x instead of writing
them again (docs/context.md, "Prompt-cache breakpoints"). 1-hour breakpoints thus always
precede the 5-minute one, as the API requires.

What the API then bills for those breakpoints is simulated in `baton.context.prompt_cache`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from baton.context.payload import EPHEMERAL, CacheControl, Message, Payload, TextBlock, ToolSpec
from baton.context.prompt_cache import CacheTTL
from baton.context.validation import MAX_CACHE_BREAKPOINTS, THINKING_BLOCK_TYPES

Anchor = tuple[Literal["tool", "system"], int] | tuple[Literal["message"], int, int]
"""Where a breakpoint goes: a tool, a system block, or (message, block) in the messages."""


def prefix_anchor(system: Sequence[TextBlock], tools: Sequence[ToolSpec]) -> Anchor | None:
    """The end of the stable prefix: the last system block, else the last tool."""
    if system:
        return ("system", len(system) - 1)
    if tools:
        return ("tool", len(tools) - 1)
    return None


def last_message_anchor(messages: Sequence[Message]) -> Anchor | None:
    """The last block that can carry a breakpoint: thinking blocks cannot, so a message that
    ends with them (an answer cut off while thinking) anchors on the block before."""
    for mi in range(len(messages) - 1, -1, -1):
        content = messages[mi]["content"]
        if isinstance(content, str):
            return None
        for bi in range(len(content) - 1, -1, -1):
            if content[bi]["type"] not in THINKING_BLOCK_TYPES:
                return ("message", mi, bi)
    return None


def choose_anchors(anchors: Sequence[Anchor | None]) -> list[Anchor]:
    """Distinct anchors, in priority order, at most four (dropping from the middle).

    The first (stable prefix) and the last (newest message) matter most: they are kept.
    """
    unique: list[Anchor] = []
    for anchor in anchors:
        if anchor is not None and anchor not in unique:
            unique.append(anchor)
    while len(unique) > MAX_CACHE_BREAKPOINTS:
        del unique[-2]
    return unique


def prompt_order(anchor: Anchor) -> tuple[int, int, int]:
    """Where `anchor` sits in the cached prefix: tools, then system, then messages."""
    if anchor[0] == "tool":
        return (0, anchor[1], 0)
    if anchor[0] == "system":
        return (1, anchor[1], 0)
    return (2, anchor[1], anchor[2])


def place_breakpoints(
    payload: Payload, anchors: Sequence[Anchor | None], *, lasting_ttl: CacheTTL = "1h"
) -> Payload:
    """`payload` with `cache_control` on the chosen anchors; the input is left untouched.

    The last anchor in prompt order gets the 5-minute default; the others `lasting_ttl`.
    """
    chosen = sorted(choose_anchors(anchors), key=prompt_order)
    lasting: CacheControl = {"type": "ephemeral", "ttl": lasting_ttl}
    if lasting_ttl == "5m":
        lasting = EPHEMERAL  # five minutes is the API's default: no ttl is sent
    out: Payload = {**payload}
    for i, anchor in enumerate(chosen):
        control = EPHEMERAL if i == len(chosen) - 1 else lasting
        if anchor[0] == "tool":
            tools = list(out.get("tools", []))
            tools[anchor[1]] = {**tools[anchor[1]], "cache_control": control}
            out["tools"] = tools
        elif anchor[0] == "system":
            system = out.get("system")
            blocks = list(system) if isinstance(system, list) else []
            blocks[anchor[1]] = {**blocks[anchor[1]], "cache_control": control}
            out["system"] = blocks
        else:
            _, mi, bi = anchor
            messages = list(out["messages"])
            content: list[Any] = list(messages[mi]["content"])
            content[bi] = {**content[bi], "cache_control": control}
            messages[mi] = {"role": messages[mi]["role"], "content": content}
            out["messages"] = messages
    return out
