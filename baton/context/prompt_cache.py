"""The one simulation of the Messages API's prompt cache, for offline usage and cost figures.

The API caches the request prefix up to each `cache_control` breakpoint, in the order tools →
system → messages. A later request that repeats a cached prefix reads it back
(`cache_read_input_tokens`, billed 0.1x); the part up to its last breakpoint that was not
cached yet is written (`cache_creation_input_tokens`); the rest is plain `input_tokens` (1x).
A write lives for its breakpoint's TTL: the part up to the last `"ttl": "1h"` breakpoint is
written for an hour (billed 2x, `cache_creation.ephemeral_1h_input_tokens`), the part after it
for five minutes (billed 1.25x), as the API splits a request mixing the two. A hit is looked
for at every block boundary up to 20 blocks before each breakpoint, prefixes shorter than the
model's minimum are never cached, and an entry lives for its TTL from the last request that
read through it.
Token counts come from the project's estimator, so the three figures always add up to
`estimate_payload_tokens(payload)`.

The offline `ScriptedModel`, the Messages API stand-in and `bench/token_cost.py` all bill
through `PrefixCache`, so the benchmark's costs are those an offline run reports
(docs/context.md, "Prompt-cache breakpoints").
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from baton.context.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    estimate_block_tokens,
    estimate_json_tokens,
    estimate_text_tokens,
)

CACHE_WRITE_MULTIPLIER = 1.25
CACHE_WRITE_1H_MULTIPLIER = 2.0
CACHE_READ_MULTIPLIER = 0.1
# How far before a breakpoint the API looks for an earlier cached prefix.
LOOKBACK_BLOCKS = 20
# Sonnet/Opus refuse to cache prefixes shorter than this (Haiku and some newer models need more).
DEFAULT_MIN_CACHE_TOKENS = 1024
_TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}

CacheTTL = Literal["5m", "1h"]


@dataclass(frozen=True, slots=True)
class CacheUsage:
    """How one request's input tokens split, as the API's `usage` would report them.

    `cache_creation_1h_input_tokens` is the part of the write that lives an hour (the API's
    `cache_creation.ephemeral_1h_input_tokens`); the rest of it lives five minutes
    (`ephemeral_5m_input_tokens`).
    """

    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    cache_creation_1h_input_tokens: int = 0

    @property
    def cache_creation_5m_input_tokens(self) -> int:
        """The part of the write that lives five minutes."""
        return self.cache_creation_input_tokens - self.cache_creation_1h_input_tokens

    @property
    def total(self) -> int:
        """All input tokens of the request."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    @property
    def billed(self) -> float:
        """Input-token equivalents billed: uncached 1x, cache write 1.25x (5 minutes) or 2x
        (1 hour), cache read 0.1x."""
        return (
            self.input_tokens
            + CACHE_WRITE_MULTIPLIER * self.cache_creation_5m_input_tokens
            + CACHE_WRITE_1H_MULTIPLIER * self.cache_creation_1h_input_tokens
            + CACHE_READ_MULTIPLIER * self.cache_read_input_tokens
        )


@dataclass(frozen=True, slots=True)
class Segment:
    """One cacheable unit of a request: what it is (a digest), its tokens, its breakpoint TTL."""

    digest: bytes
    tokens: int
    ttl: CacheTTL | None  # set when the unit carries a cache_control breakpoint


_Memo = dict[tuple[int, str], tuple[Any, bytes, int]]
# A memo is dropped wholesale past this many entries, so it cannot grow without bound.
_MEMO_LIMIT = 200_000


def _digest(*parts: bytes) -> bytes:
    return hashlib.blake2b(b"\x00".join(parts), digest_size=16).digest()


def _body(value: Any) -> bytes:
    if isinstance(value, Mapping):
        value = {k: v for k, v in value.items() if k != "cache_control"}
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()


def _breakpoint_ttl(item: Any) -> CacheTTL | None:
    if not isinstance(item, Mapping):
        return None
    control = item.get("cache_control")
    if not isinstance(control, Mapping):
        return None
    return "1h" if control.get("ttl", "5m") == "1h" else "5m"


def _item_cost(item: Any, kind: Literal["tool", "block"], memo: _Memo | None) -> tuple[bytes, int]:
    """The digest of `item` without its breakpoint, and its tokens, remembered per object."""
    hit = memo.get((id(item), kind)) if memo is not None else None
    if hit is not None and hit[0] is item:
        return hit[1], hit[2]
    body = _digest(_body(item))
    if kind == "tool":  # a tool is billed as its JSON, breakpoint left out
        tokens = estimate_json_tokens({k: v for k, v in item.items() if k != "cache_control"})
    else:
        tokens = estimate_block_tokens(item)
    # Marked items are fresh copies every call (placement copies what it marks): not worth
    # remembering. The entry holds the item, so its id is not reused while remembered.
    if memo is not None and _breakpoint_ttl(item) is None:
        if len(memo) >= _MEMO_LIMIT:
            memo.clear()
        memo[(id(item), kind)] = (item, body, tokens)
    return body, tokens


def iter_segments(payload: Mapping[str, Any], memo: _Memo | None = None) -> Iterator[Segment]:
    """The request as cacheable units in API order; their tokens sum to the payload estimate.

    A unit's digest names its place too (tool, system, a message's first or later block), so
    equal digest chains mean equal prefixes.
    """
    for tool in payload.get("tools") or ():
        body, tokens = _item_cost(tool, "tool", memo)
        yield Segment(_digest(b"tool", body), tokens, _breakpoint_ttl(tool))
    system = payload.get("system")
    if isinstance(system, str) and system:
        yield Segment(_digest(b"system:str", _body(system)), estimate_text_tokens(system), None)
    elif isinstance(system, list):
        for block in system:
            body, tokens = _item_cost(block, "block", memo)
            yield Segment(_digest(b"system", body), tokens, _breakpoint_ttl(block))
    for message in payload.get("messages") or ():
        role = str(message.get("role")).encode()
        content = message.get("content")
        if isinstance(content, str):
            tokens = estimate_text_tokens(content) + MESSAGE_OVERHEAD_TOKENS
            yield Segment(_digest(role, b"str", _body(content)), tokens, None)
            continue
        blocks = content if isinstance(content, list) else []
        if not blocks:
            yield Segment(_digest(role, b"empty"), MESSAGE_OVERHEAD_TOKENS, None)
        for j, block in enumerate(blocks):
            body, tokens = _item_cost(block, "block", memo)
            # The message's framing is billed with its first block, so a prefix that ends
            # anywhere inside the message already includes it.
            first = j == 0
            yield Segment(
                _digest(role, b"first" if first else b"next", body),
                tokens + (MESSAGE_OVERHEAD_TOKENS if first else 0),
                _breakpoint_ttl(block),
            )


class PrefixCache:
    """Remembers written prefixes and splits each request's input tokens the way the API does.

    `namespace` (the model name) keeps models apart, as the real cache does. The clock is
    injectable so tests can let entries expire without waiting, and a simulation with no wall
    time (the benchmark) can hold it still. `stable_blocks=True` promises that the payloads'
    block objects are never changed once sent (true of what a `Conversation` composes): each
    block is then digested and counted once, which keeps a long simulated session linear.
    """

    def __init__(
        self,
        *,
        min_tokens: int = DEFAULT_MIN_CACHE_TOKENS,
        clock: Callable[[], float] = time.monotonic,
        stable_blocks: bool = False,
    ) -> None:
        self.min_tokens = min_tokens
        self._clock = clock
        self._entries: dict[bytes, tuple[float, float]] = {}  # prefix -> (expires_at, ttl_s)
        self._memo: _Memo | None = {} if stable_blocks else None

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget every cached prefix."""
        self._entries.clear()

    def usage_for(self, payload: Mapping[str, Any], namespace: str = "") -> CacheUsage:
        """Split `payload`'s input tokens into plain, written and read, and update the cache."""
        now = self._clock()
        running = _digest(namespace.encode())
        boundaries: list[tuple[bytes, int]] = []  # (prefix digest, prefix tokens) per segment
        breakpoints: list[tuple[int, CacheTTL]] = []  # (segment index, ttl)
        total = 0
        for index, segment in enumerate(iter_segments(payload, self._memo)):
            running = _digest(running, segment.digest)
            total += segment.tokens
            boundaries.append((running, total))
            if segment.ttl is not None:
                breakpoints.append((index, segment.ttl))
        read = self._longest_hit(boundaries, breakpoints, now)
        written = hour = 0
        for index, bp_ttl in breakpoints:
            key, tokens = boundaries[index]
            if tokens < self.min_tokens:
                continue
            # A live entry is in the part read, so it was used: it lives on for its own TTL
            # from now. A missing one is written with this breakpoint's TTL.
            live = self._live(key, now)
            seconds = _TTL_SECONDS[bp_ttl] if live is None else live[1]
            self._entries[key] = (now + seconds, seconds)
        if breakpoints:
            last_tokens = boundaries[breakpoints[-1][0]][1]
            if last_tokens >= self.min_tokens:
                written = last_tokens - read
                # Past the hit, up to the last 1-hour breakpoint the write lives an hour; the
                # rest (up to the last breakpoint) five minutes, as the API splits it.
                hour_end = max(
                    (
                        boundaries[i][1]
                        for i, t in breakpoints
                        if t == "1h" and boundaries[i][1] >= self.min_tokens
                    ),
                    default=read,
                )
                hour = min(written, max(0, hour_end - read))
        return CacheUsage(
            input_tokens=total - read - written,
            cache_creation_input_tokens=written,
            cache_read_input_tokens=read,
            cache_creation_1h_input_tokens=hour,
        )

    def _live(self, key: bytes, now: float) -> tuple[float, float] | None:
        entry = self._entries.get(key)
        if entry is None or entry[0] <= now:
            return None
        return entry

    def _longest_hit(
        self,
        boundaries: list[tuple[bytes, int]],
        breakpoints: list[tuple[int, CacheTTL]],
        now: float,
    ) -> int:
        best_index = -1
        for bp_index, _ in breakpoints:
            for index in range(bp_index, max(-1, bp_index - LOOKBACK_BLOCKS - 1), -1):
                if index > best_index and self._live(boundaries[index][0], now) is not None:
                    best_index = index
                    break
        if best_index < 0:
            return 0
        key, tokens = boundaries[best_index]
        _, ttl_s = self._entries[key]
        self._entries[key] = (now + ttl_s, ttl_s)  # a read refreshes the entry's lifetime
        return tokens
