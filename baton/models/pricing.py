"""What model calls cost: list prices in USD per million tokens, per model.

The table and where each figure comes from are in docs/models.md, "Prices". Every figure is
an estimate from published list prices (no batch or volume discount, no tax): the bill is
what Anthropic charges. A price the project does not know is `None`, never a guess, and a
cost that needs it is `None` too (shown as "—"). A model may be priced in two tiers by the
length of a request's prompt (`LongPromptPrice`); each call is priced on its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from baton.context.prompt_cache import CacheTTL
from baton.context.usage import Usage

PER_TOKENS = 1_000_000
"""Prices are per this many tokens."""

KINDS = ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read")
"""The kinds of token a price row names, as `ModelPrice` and `[prices."<model-id>"]` spell them."""

# Where a model's row does not state its cache-write prices, they follow from its input
# price as Anthropic sets them: a 5-minute write costs 1.25x input, a 1-hour write 2x.
CACHE_WRITE_5M = 1.25
CACHE_WRITE_1H = 2.0

_DATED = re.compile(r"-\d{8}$")  # `claude-opus-4-5-20251101` is priced as `claude-opus-4-5`


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per million tokens of each kind; `None` where no price is known. `long_prompt`,
    when set, prices a request whose prompt is longer than its threshold instead."""

    input: float | None
    output: float | None
    cache_write_5m: float | None
    cache_write_1h: float | None
    cache_read: float | None
    long_prompt: LongPromptPrice | None = None

    @classmethod
    def listed(
        cls,
        input: float,
        output: float,
        *,
        cache_read: float | None = None,
        cache_write_5m: float | None = None,
        cache_write_1h: float | None = None,
        long_prompt: LongPromptPrice | None = None,
    ) -> ModelPrice:
        """A published price; cache writes not given follow from `input` (see above)."""
        return cls(
            input=input,
            output=output,
            cache_write_5m=input * CACHE_WRITE_5M if cache_write_5m is None else cache_write_5m,
            cache_write_1h=input * CACHE_WRITE_1H if cache_write_1h is None else cache_write_1h,
            cache_read=cache_read,
            long_prompt=long_prompt,
        )

    def unknown_kinds(self) -> tuple[str, ...]:
        """The kinds of token this tier has no price for (its long-prompt tier aside)."""
        return tuple(kind for kind in KINDS if getattr(self, kind) is None)

    @property
    def known(self) -> bool:
        """Whether every kind of token has a price, in every tier."""
        tier = self.long_prompt
        return not self.unknown_kinds() and (tier is None or tier.price.known)

    def for_prompt(self, prompt: int) -> ModelPrice:
        """The prices a request whose prompt is `prompt` tokens pays: the long-prompt tier's
        when the prompt is over its threshold (every kind, output included), else these."""
        tier = self.long_prompt
        if tier is not None and prompt > tier.over_tokens:
            return tier.price
        return self


@dataclass(frozen=True, slots=True)
class LongPromptPrice:
    """The tier of a request whose prompt is more than `over_tokens` tokens long: every token
    of it, output included, costs `price` (docs/models.md, "Prices")."""

    over_tokens: int
    price: ModelPrice


def prompt_tokens(usage: Usage) -> int:
    """The length of a call's prompt, as a long-prompt tier is chosen by: every input token,
    cached or not (uncached input, cache writes, cache reads); output does not count."""
    return usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens


UNKNOWN = ModelPrice(None, None, None, None, None)
FREE = ModelPrice(0.0, 0.0, 0.0, 0.0, 0.0)

PRICES: Mapping[str, ModelPrice] = MappingProxyType(
    {
        # November 2026 list prices (docs/models.md, "Prices").
        "claude-opus-5-5": ModelPrice.listed(4.0, 20.0, cache_read=0.20),
        "claude-sonnet-5-5": ModelPrice.listed(
            2.0, 10.0, cache_write_5m=2.50, cache_write_1h=4.0, cache_read=0.20
        ),
        # Two tiers: a prompt of up to 100,000 tokens, and a longer one (cache reads at 0.1x
        # input in each, as published; cache writes follow each tier's input).
        "claude-haiku-5-5": ModelPrice.listed(
            0.10,
            0.50,
            cache_read=0.01,
            long_prompt=LongPromptPrice(100_000, ModelPrice.listed(0.50, 2.50, cache_read=0.05)),
        ),
        # Fable 5.1's cache-read price is not published here: costs with cache reads are "—".
        "claude-fable-5-1": ModelPrice.listed(10.0, 50.0),
        # Any other model (the older ones) has no row: `price_for` gives UNKNOWN and its
        # costs are "—".
        # The offline scripted model calls no API: it costs nothing.
        "offline-scripted": FREE,
        # Nor does a replay of a recording (docs/recordings.md).
        "offline-replay": FREE,
    }
)
"""USD per million tokens, by model id."""


def price_for(model: str, prices: Mapping[str, ModelPrice] = PRICES) -> ModelPrice:
    """The price row of `model` (a dated id takes its model's row); `UNKNOWN` if none."""
    return prices.get(model) or prices.get(_DATED.sub("", model)) or UNKNOWN


def cost_usd(
    model: str,
    usage: Usage,
    *,
    cache_ttl: CacheTTL = "5m",
    prices: Mapping[str, ModelPrice] = PRICES,
) -> float | None:
    """The estimated cost in USD of one call's `usage` on `model` (at the tier its prompt's
    length picks); None if a price it needs is unknown.

    Cache writes are priced at `cache_ttl`'s rate, except the part `usage` reports as written
    for an hour (`cache_creation_1h_input_tokens`), always at the 1-hour rate. A server-side
    compaction the call ran is billed too, on its own prompt's tier (docs/models.md, "Prices").
    """
    row = price_for(model, prices)
    price = row.for_prompt(prompt_tokens(usage))
    write = price.cache_write_5m if cache_ttl == "5m" else price.cache_write_1h
    hour = min(usage.cache_creation_1h_input_tokens, usage.cache_creation_input_tokens)
    counts = [
        (usage.input_tokens, price.input),
        (usage.cache_creation_input_tokens - hour, write),
        (hour, price.cache_write_1h),
        (usage.cache_read_input_tokens, price.cache_read),
        (usage.output_tokens, price.output),
    ]
    compaction_prompt = (
        usage.compaction_input_tokens
        + usage.compaction_cache_creation_input_tokens
        + usage.compaction_cache_read_input_tokens
    )
    if compaction_prompt or usage.compaction_output_tokens:
        tier = row.for_prompt(compaction_prompt)
        counts += [
            (usage.compaction_input_tokens, tier.input),
            (usage.compaction_cache_creation_input_tokens, tier.cache_write_5m),
            (usage.compaction_cache_read_input_tokens, tier.cache_read),
            (usage.compaction_output_tokens, tier.output),
        ]
    total = 0.0
    for tokens, rate in counts:
        if tokens == 0:
            continue  # a kind of token not used needs no price
        if rate is None:
            return None
        total += tokens * rate / PER_TOKENS
    return total
