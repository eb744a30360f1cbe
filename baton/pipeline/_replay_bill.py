"""What a replayed run is billed: every request through the prompt cache under each cache
lifetime, summed per kind of token and priced (docs/context.md, "What a run would have
cost").

Each request is billed three times, by three `PrefixCache`s: as the policy composed it, with
every breakpoint living five minutes, and with every breakpoint living an hour. What the
requests carry and when they are sent is the same for the three, so one replay gives all
three bills; the cache lifetime changes only what is read back after a long wait, and what a
write costs (1.25x input for five minutes, 2x for an hour).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from baton.context.prompt_cache import (
    CACHE_READ_MULTIPLIER,
    CACHE_WRITE_1H_MULTIPLIER,
    CACHE_WRITE_MULTIPLIER,
    CacheUsage,
    PrefixCache,
)
from baton.context.usage import Usage
from baton.models.pricing import ModelPrice, cost_usd

Variant = Literal["composed", "5m", "1h"]
VARIANTS: tuple[Variant, ...] = ("composed", "5m", "1h")

_FIVE_MINUTES: dict[str, Any] = {"type": "ephemeral"}
_ONE_HOUR: dict[str, Any] = {"type": "ephemeral", "ttl": "1h"}


@dataclass(frozen=True)
class Pricing:
    """The model a replay's tokens are priced at, and the price table (baton.toml's
    `[prices]` over the package's)."""

    model: str
    prices: Mapping[str, ModelPrice]

    def cost(self, usage: Usage) -> float | None:
        """USD of one call's `usage`, at the tier its prompt's length picks; None when a
        price it needs is unknown."""
        return cost_usd(self.model, usage, prices=self.prices)


@dataclass
class Tally:
    """Calls and tokens summed, and what they cost (None once one call's price is unknown)."""

    calls: int = 0
    summary_calls: int = 0
    input_tokens: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    cache_read: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0

    def add(self, usage: Usage, cost: float | None, *, summary: bool = False) -> None:
        """Count one call; a server-side compaction it ran counts as tokens of its kinds
        (the iteration's cache writes live five minutes, as `cost_usd` prices them)."""
        hour = min(usage.cache_creation_1h_input_tokens, usage.cache_creation_input_tokens)
        self.calls += 1
        self.summary_calls += summary
        self.input_tokens += usage.input_tokens + usage.compaction_input_tokens
        self.cache_write_5m += (
            usage.cache_creation_input_tokens - hour + usage.compaction_cache_creation_input_tokens
        )
        self.cache_write_1h += hour
        self.cache_read += usage.cache_read_input_tokens + usage.compaction_cache_read_input_tokens
        self.output_tokens += usage.output_tokens + usage.compaction_output_tokens
        self.cost_usd = None if cost is None or self.cost_usd is None else self.cost_usd + cost

    def merge(self, other: Tally) -> None:
        """Add `other`'s calls to these."""
        for name in (
            "calls",
            "summary_calls",
            "input_tokens",
            "cache_write_5m",
            "cache_write_1h",
            "cache_read",
            "output_tokens",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        known = self.cost_usd is not None and other.cost_usd is not None
        self.cost_usd = self.cost_usd + other.cost_usd if known else None  # type: ignore[operator]

    @property
    def billed(self) -> float:
        """Input-token equivalents billed: uncached 1x, cache writes 1.25x (five minutes) or
        2x (an hour), cache reads 0.1x."""
        return (
            self.input_tokens
            + CACHE_WRITE_MULTIPLIER * self.cache_write_5m
            + CACHE_WRITE_1H_MULTIPLIER * self.cache_write_1h
            + CACHE_READ_MULTIPLIER * self.cache_read
        )

    def same_tokens(self, other: Tally) -> bool:
        """Whether the two bills count the same tokens of every kind."""
        return (
            self.input_tokens,
            self.cache_write_5m,
            self.cache_write_1h,
            self.cache_read,
            self.output_tokens,
        ) == (
            other.input_tokens,
            other.cache_write_5m,
            other.cache_write_1h,
            other.cache_read,
            other.output_tokens,
        )


def _retimed(items: Any, control: dict[str, Any]) -> Any:
    """`items` with every `cache_control` replaced by `control` (copies of the marked items
    only: the others stay the same objects, which the cache remembers by identity)."""
    if not isinstance(items, list):
        return items
    changed = False
    out = []
    for item in items:
        marked = isinstance(item, Mapping) and "cache_control" in item
        out.append({**item, "cache_control": control} if marked else item)
        changed = changed or marked
    return out if changed else items


def with_lifetime(payload: Mapping[str, Any], variant: Variant) -> Mapping[str, Any]:
    """`payload` as `variant` bills it: as composed, or every breakpoint five minutes or an
    hour long."""
    if variant == "composed":
        return payload
    control = _ONE_HOUR if variant == "1h" else _FIVE_MINUTES
    body: dict[str, Any] = dict(payload)
    for key in ("tools", "system"):
        if key in body:
            body[key] = _retimed(body[key], control)
    messages = []
    for message in payload["messages"]:
        content = _retimed(message["content"], control)
        messages.append(
            message if content is message["content"] else {**message, "content": content}
        )
    body["messages"] = messages
    return body


class Biller:
    """One conversation's requests, billed under each cache lifetime on one clock."""

    def __init__(
        self, pricing: Pricing, *, clock: Callable[[], float], min_cache_tokens: int
    ) -> None:
        self.pricing = pricing
        # Per lifetime its own cache: what one of them keeps says nothing of the others.
        self._caches = {
            variant: PrefixCache(min_tokens=min_cache_tokens, clock=clock, stable_blocks=True)
            for variant in VARIANTS
        }
        self.tallies = {variant: Tally() for variant in VARIANTS}

    def forget(self) -> None:
        """Empty every cache (a new process of the offline model starts with none)."""
        for cache in self._caches.values():
            cache.clear()

    def split(self, payload: Mapping[str, Any]) -> dict[Variant, CacheUsage]:
        """`payload`'s input tokens as each lifetime's cache splits them (updating it)."""
        return {
            variant: cache.usage_for(with_lifetime(payload, variant), self.pricing.model)
            for variant, cache in self._caches.items()
        }

    def bill(self, usages: Mapping[Variant, Usage], *, summary: bool) -> None:
        """Count one call, as each lifetime's cache billed it."""
        for variant, usage in usages.items():
            self.tallies[variant].add(usage, self.pricing.cost(usage), summary=summary)


def usage_of(cached: CacheUsage, output_tokens: int = 0) -> Usage:
    """The `Usage` a call with input split as `cached` and `output_tokens` reports."""
    return Usage(
        input_tokens=cached.input_tokens,
        cache_creation_input_tokens=cached.cache_creation_input_tokens,
        cache_read_input_tokens=cached.cache_read_input_tokens,
        cache_creation_1h_input_tokens=cached.cache_creation_1h_input_tokens,
        output_tokens=output_tokens,
    )
