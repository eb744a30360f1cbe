"""Prices and the spend cap as `baton.toml` sets them: `[prices."<model-id>"]` rows merged over
the package's table, and `[scenario] max_cost_usd`, the default cap of every scenario.

docs/models.md, "Prices", says how a row is merged; README.md, "Configuration", lists the keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from baton.models.pricing import (
    CACHE_WRITE_1H,
    CACHE_WRITE_5M,
    KINDS,
    PRICES,
    UNKNOWN,
    LongPromptPrice,
    ModelPrice,
    price_for,
)

_PLACEHOLDER = "<USD per MTok>"


class _Rates(BaseModel):
    """USD per million tokens of each kind a table names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float | None = Field(None, ge=0, description="uncached input tokens")
    output: float | None = Field(None, ge=0, description="generated tokens")
    cache_write_5m: float | None = Field(None, ge=0, description="5-minute cache writes")
    cache_write_1h: float | None = Field(None, ge=0, description="1-hour cache writes")
    cache_read: float | None = Field(None, ge=0, description="cache reads")

    def _merged(self, base: ModelPrice) -> dict[str, Any]:
        """`base`'s kinds with the ones named here over them: a cache write `base` has no
        price for follows a given `input` (1.25x, 2x), as Anthropic's do."""
        merged: dict[str, Any] = {}
        for kind in KINDS:
            given = getattr(self, kind)
            merged[kind] = getattr(base, kind) if given is None else given
        if self.input is not None:
            derived = (("cache_write_5m", CACHE_WRITE_5M), ("cache_write_1h", CACHE_WRITE_1H))
            for key, factor in derived:
                if merged[key] is None:
                    merged[key] = self.input * factor
        return merged


class LongPromptOverride(_Rates):
    """`[prices."<model-id>".long_prompt]`: the tier of a request whose prompt is longer than
    `over_tokens` (docs/models.md, "Prices")."""

    over_tokens: int = Field(
        gt=0,
        strict=True,
        description="a request whose prompt (input, cache writes and reads) has more tokens "
        "than this is priced by this table",
    )

    def over(self, base: LongPromptPrice | None) -> LongPromptPrice:
        """This tier over `base`'s (a kind not named keeps its price there, if any)."""
        shipped = base.price if base is not None else UNKNOWN
        return LongPromptPrice(self.over_tokens, ModelPrice(**self._merged(shipped)))


class PriceOverride(_Rates):
    """One `[prices."<model-id>"]` table: USD per million tokens of each kind it names, and
    its long-prompt tier if it has one."""

    long_prompt: LongPromptOverride | None = Field(
        None, description="the prices of a request whose prompt is over `over_tokens`"
    )

    def over(self, base: ModelPrice) -> ModelPrice:
        """This row over `base`: a kind not named keeps `base`'s price, except a cache write
        `base` has no price for, which follows a given `input` (1.25x, 2x) as Anthropic's do;
        likewise the long-prompt tier, kept as `base` has it when not named."""
        tier = base.long_prompt
        if self.long_prompt is not None:
            tier = self.long_prompt.over(tier)
        return ModelPrice(**self._merged(base), long_prompt=tier)


class ScenarioLimits(BaseModel):
    """`[scenario]` in a scenario.toml, and in `baton.toml` for every scenario whose own file
    leaves a key out."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_cost_usd: float | None = Field(
        None, gt=0, description="spend cap per scenario run in USD; unset: no cap"
    )


def merged_prices(overrides: Mapping[str, PriceOverride]) -> Mapping[str, ModelPrice]:
    """The package's table with `overrides` merged over it (the package's when none)."""
    if not overrides:
        return PRICES
    table = dict(PRICES)
    for model, row in overrides.items():
        table[model] = row.over(price_for(model))
    return MappingProxyType(table)


def missing_price_lines(model: str, price: ModelPrice) -> list[str]:
    """The `baton.toml` lines that would give `model` a price for every kind `price` lacks,
    each with a number to fill in; none when it has them all."""
    lines = _missing(f'[prices."{model}"]', price)
    tier = price.long_prompt
    if tier is not None:
        header = f'[prices."{model}".long_prompt]'
        lines += _missing(header, tier.price, f"over_tokens = {tier.over_tokens}")
    return lines


def _missing(header: str, rates: ModelPrice, *first: str) -> list[str]:
    unknown = rates.unknown_kinds()
    if rates.input is None:
        # The `input` asked for fills in the cache writes (`_Rates._merged`).
        unknown = tuple(kind for kind in unknown if not kind.startswith("cache_write"))
    return [header, *first, *(f"{kind} = {_PLACEHOLDER}" for kind in unknown)] if unknown else []
