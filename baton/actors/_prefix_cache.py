"""A simulation of the Messages API's prompt cache, for offline usage figures.

The API caches the request prefix up to each `cache_control` breakpoint, in the order tools →
system → messages. A later request that repeats a cached prefix reads it back
(`cache_read_input_tokens`); the part up to its last breakpoint that was not cached yet is
written (`cache_creation_input_tokens`); the rest is plain `input_tokens`. A hit is looked
for at every block boundary up to 20 blocks before each breakpoint, prefixes shorter than the
model's minimum are never cached, and an entry lives for its TTL (5 minutes, or 1 hour),
refreshed on each read. Token counts come from the project's estimator, so the three figures
always add up to `estimate_payload_tokens(payload)`.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from baton.context.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    estimate_block_tokens,
    estimate_json_tokens,
    estimate_text_tokens,
)

# How far before a breakpoint the API looks for an earlier cached prefix.
LOOKBACK_BLOCKS = 20
# Sonnet/Opus refuse to cache prefixes shorter than this (Haiku and some newer models need more).
DEFAULT_MIN_CACHE_TOKENS = 1024
_TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}


@dataclass(frozen=True)
class CacheUsage:
    """How one request's input tokens split between plain, cache-write and cache-read."""

    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    ttl: str = "5m"


@dataclass(frozen=True)
class _Segment:
    key: str
    tokens: int
    ttl: str | None  # set when the segment carries a cache_control breakpoint


def _without_cache_control(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k != "cache_control"}


def _breakpoint_ttl(item: Any) -> str | None:
    if not isinstance(item, Mapping):
        return None
    control = item.get("cache_control")
    if not isinstance(control, Mapping):
        return None
    ttl = control.get("ttl", "5m")
    return ttl if ttl in _TTL_SECONDS else "5m"


def _key(*parts: Any) -> str:
    return json.dumps(parts, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def iter_segments(payload: Mapping[str, Any]) -> Iterator[_Segment]:
    """The request as cacheable units in API order; their tokens sum to the payload estimate."""
    for tool in payload.get("tools") or ():
        spec = _without_cache_control(tool)
        yield _Segment(_key("tool", spec), estimate_json_tokens(spec), _breakpoint_ttl(tool))
    system = payload.get("system")
    if isinstance(system, str) and system:
        yield _Segment(_key("system", system), estimate_text_tokens(system), None)
    elif isinstance(system, list):
        for block in system:
            yield _Segment(
                _key("system", _without_cache_control(block)),
                estimate_block_tokens(block),
                _breakpoint_ttl(block),
            )
    for index, message in enumerate(payload.get("messages") or ()):
        role = message.get("role")
        content = message.get("content")
        if isinstance(content, str):
            tokens = estimate_text_tokens(content) + MESSAGE_OVERHEAD_TOKENS
            yield _Segment(_key(index, role, content), tokens, None)
            continue
        blocks = content if isinstance(content, list) else []
        if not blocks:
            yield _Segment(_key(index, role), MESSAGE_OVERHEAD_TOKENS, None)
        for j, block in enumerate(blocks):
            # The message's framing is billed with its first block, so a prefix that ends
            # anywhere inside the message already includes it.
            overhead = MESSAGE_OVERHEAD_TOKENS if j == 0 else 0
            yield _Segment(
                _key(index, role, _without_cache_control(block)),
                estimate_block_tokens(block) + overhead,
                _breakpoint_ttl(block),
            )


class PrefixCache:
    """Remembers written prefixes and splits each request's input tokens the way the API does.

    `namespace` (the model name) keeps models apart, as the real cache does. The clock is
    injectable so tests can let entries expire without waiting.
    """

    def __init__(
        self,
        *,
        min_tokens: int = DEFAULT_MIN_CACHE_TOKENS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.min_tokens = min_tokens
        self._clock = clock
        self._entries: dict[str, tuple[float, float]] = {}  # digest -> (expires_at, ttl_s)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget every cached prefix."""
        self._entries.clear()

    def usage_for(self, payload: Mapping[str, Any], namespace: str = "") -> CacheUsage:
        """Split `payload`'s input tokens into plain, written and read, and update the cache."""
        now = self._clock()
        digest = hashlib.sha256(namespace.encode())
        boundaries: list[tuple[str, int]] = []  # (prefix digest, prefix tokens) per segment
        breakpoints: list[tuple[int, str]] = []  # (segment index, ttl)
        total = 0
        for index, segment in enumerate(iter_segments(payload)):
            digest.update(segment.key.encode())
            total += segment.tokens
            boundaries.append((digest.hexdigest(), total))
            if segment.ttl is not None:
                breakpoints.append((index, segment.ttl))
        read = self._longest_hit(boundaries, breakpoints, now)
        written = 0
        ttl = breakpoints[-1][1] if breakpoints else "5m"
        for index, bp_ttl in breakpoints:
            key, tokens = boundaries[index]
            if tokens >= self.min_tokens and self._live(key, now) is None:
                self._entries[key] = (now + _TTL_SECONDS[bp_ttl], _TTL_SECONDS[bp_ttl])
        if breakpoints:
            last_tokens = boundaries[breakpoints[-1][0]][1]
            if last_tokens >= self.min_tokens:
                written = last_tokens - read
        return CacheUsage(
            input_tokens=total - read - written,
            cache_creation_input_tokens=written,
            cache_read_input_tokens=read,
            ttl=ttl,
        )

    def _live(self, key: str, now: float) -> tuple[float, float] | None:
        entry = self._entries.get(key)
        if entry is None or entry[0] <= now:
            return None
        return entry

    def _longest_hit(
        self, boundaries: list[tuple[str, int]], breakpoints: list[tuple[int, str]], now: float
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
