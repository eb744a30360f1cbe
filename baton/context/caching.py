"""Prompt-cache breakpoints, and a simulation of Anthropic's prefix cache to measure them.

Breakpoints go on the stable prefix (the last system block, or the last tool: the cache
prefix runs tools → system → messages), on the summary, at the end of a history part that
stays put while the recent part changes, and on the last message: at most four, which is
the API's limit. Placement copies only the blocks it marks; the composed pieces a
conversation caches are never mutated.

`PromptCacheSimulator` charges a payload the way the API bills it: the longest prefix
written by an earlier call (looked up at each breakpoint and up to 20 blocks before it) is
read at 0.1x, the rest up to the last breakpoint is written at 1.25x, the tail is 1x.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from baton.context.payload import EPHEMERAL, Message, Payload, TextBlock, ToolSpec
from baton.context.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    estimate_block_tokens,
    estimate_json_tokens,
)
from baton.context.validation import MAX_CACHE_BREAKPOINTS, THINKING_BLOCK_TYPES

CACHE_WRITE_MULTIPLIER = 1.25
CACHE_READ_MULTIPLIER = 0.1
CACHE_LOOKBACK_BLOCKS = 20
MIN_CACHEABLE_TOKENS = 1024

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


def place_breakpoints(payload: Payload, anchors: Sequence[Anchor | None]) -> Payload:
    """`payload` with `cache_control` on the chosen anchors; the input is left untouched."""
    out: Payload = {**payload}
    for anchor in choose_anchors(anchors):
        if anchor[0] == "tool":
            tools = list(out.get("tools", []))
            tools[anchor[1]] = {**tools[anchor[1]], "cache_control": EPHEMERAL}
            out["tools"] = tools
        elif anchor[0] == "system":
            system = out.get("system")
            blocks = list(system) if isinstance(system, list) else []
            blocks[anchor[1]] = {**blocks[anchor[1]], "cache_control": EPHEMERAL}
            out["system"] = blocks
        else:
            _, mi, bi = anchor
            messages = list(out["messages"])
            content: list[Any] = list(messages[mi]["content"])
            content[bi] = {**content[bi], "cache_control": EPHEMERAL}
            messages[mi] = {"role": messages[mi]["role"], "content": content}
            out["messages"] = messages
    return out


# --- simulation ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CacheCharge:
    """How one request's input tokens split, as the API's `usage` would report them."""

    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int

    @property
    def total(self) -> int:
        """All input tokens of the request."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    @property
    def billed(self) -> float:
        """Input-token equivalents billed: uncached 1x, cache write 1.25x, cache read 0.1x."""
        return (
            self.input_tokens
            + CACHE_WRITE_MULTIPLIER * self.cache_creation_input_tokens
            + CACHE_READ_MULTIPLIER * self.cache_read_input_tokens
        )


def _strip(block: Any) -> Any:
    return {k: v for k, v in block.items() if k != "cache_control"}


# Blocks a conversation renders once are the same objects turn after turn; digesting each
# only once keeps a long simulated session linear. Entries hold the block so its id stays
# unique while remembered; the memo is dropped wholesale when it grows too big.
_MEMO_LIMIT = 200_000


def _block_cost(
    block: Any, memo: dict[int, tuple[Any, bytes, int]], kind: str
) -> tuple[bytes, int]:
    hit = memo.get(id(block))
    if hit is not None and hit[0] is block:
        return hit[1], hit[2]
    bare = _strip(block)
    body = json.dumps(bare, sort_keys=True, ensure_ascii=False).encode()
    digest = hashlib.blake2b(body, digest_size=16).digest()
    cost = estimate_json_tokens(bare) if kind == "tool" else estimate_block_tokens(block)
    if "cache_control" not in block:
        if len(memo) >= _MEMO_LIMIT:
            memo.clear()
        memo[id(block)] = (block, digest, cost)
    return digest, cost


def _flatten(
    payload: Payload, memo: dict[int, tuple[Any, bytes, int]]
) -> tuple[list[bytes], list[int], list[int]]:
    """Cumulative prefix hashes, cumulative tokens, and breakpoint positions, per block."""
    hashes: list[bytes] = []
    tokens: list[int] = []
    breakpoints: list[int] = []
    running = b""
    total = 0

    def push(kind: str, block: Any, overhead: int = 0) -> None:
        nonlocal total, running
        digest, cost = _block_cost(block, memo, kind)
        running = hashlib.blake2b(running + kind.encode() + digest, digest_size=16).digest()
        total += cost + overhead
        hashes.append(running)
        tokens.append(total)
        if block.get("cache_control") is not None:
            breakpoints.append(len(hashes) - 1)

    for tool in payload.get("tools") or ():
        push("tool", tool)
    system: Any = payload.get("system")
    if isinstance(system, str):
        system = [{"type": "text", "text": system}] if system else []
    for block in system or ():
        push("system", block)
    for message in payload["messages"]:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for index, block in enumerate(blocks):
            first = index == 0
            push(f"{message['role']}:{first}", block, MESSAGE_OVERHEAD_TOKENS if first else 0)
    return hashes, tokens, breakpoints


class PromptCacheSimulator:
    """A prefix cache shared by the requests charged to it (entries never expire)."""

    def __init__(
        self,
        *,
        min_cacheable_tokens: int = MIN_CACHEABLE_TOKENS,
        lookback_blocks: int = CACHE_LOOKBACK_BLOCKS,
    ) -> None:
        self.min_cacheable_tokens = min_cacheable_tokens
        self.lookback_blocks = lookback_blocks
        self._entries: set[bytes] = set()
        self._memo: dict[int, tuple[Any, bytes, int]] = {}

    def charge(self, payload: Payload) -> CacheCharge:
        """Split `payload`'s input tokens into uncached, written and read; remember writes."""
        hashes, tokens, breakpoints = _flatten(payload, self._memo)
        total = tokens[-1] if tokens else 0
        read_upto = -1
        for point in breakpoints:
            for q in range(point, max(-1, point - self.lookback_blocks - 1), -1):
                if hashes[q] in self._entries:
                    read_upto = max(read_upto, q)
                    break
        read = tokens[read_upto] if read_upto >= 0 else 0
        cacheable = [p for p in breakpoints if tokens[p] >= self.min_cacheable_tokens]
        if not cacheable:
            return CacheCharge(total - read, 0, read)
        last = cacheable[-1]
        written = max(0, tokens[last] - read)
        self._entries.update(hashes[p] for p in cacheable)
        return CacheCharge(total - read - written, written, read)
