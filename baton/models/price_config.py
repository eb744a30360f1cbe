"""Prices and the spend cap as `baton.toml` sets them: `[prices."<model-id>"]` rows merged over
the package's table, and `[scenario] max_cost_usd`, the default cap of every scenario.

docs/models.md, "Prices", says how a row is merged; README.md, "Configuration", lists the keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from pydantic import BaseModel, ConfigDict, Field

from baton.models.pricing import CACHE_WRITE_1H, CACHE_WRITE_5M, PRICES, ModelPrice, price_for


class PriceOverride(BaseModel):
    """One `[prices."<model-id>"]` table: USD per million tokens of each kind it names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float | None = Field(None, ge=0, description="uncached input tokens")
    output: float | None = Field(None, ge=0, description="generated tokens")
    cache_write_5m: float | None = Field(None, ge=0, description="5-minute cache writes")
    cache_write_1h: float | None = Field(None, ge=0, description="1-hour cache writes")
    cache_read: float | None = Field(None, ge=0, description="cache reads")

    def over(self, base: ModelPrice) -> ModelPrice:
        """This row over `base`: a kind not named keeps `base`'s price, except a cache write
        `base` has no price for, which follows a given `input` (1.25x, 2x) as Anthropic's do."""
        given = self.model_dump(exclude_none=True)
        merged = {
            "input": base.input,
            "output": base.output,
            "cache_write_5m": base.cache_write_5m,
            "cache_write_1h": base.cache_write_1h,
            "cache_read": base.cache_read,
            **given,
        }
        if self.input is not None:
            derived = (("cache_write_5m", CACHE_WRITE_5M), ("cache_write_1h", CACHE_WRITE_1H))
            for key, factor in derived:
                if merged[key] is None:
                    merged[key] = self.input * factor
        return ModelPrice(**merged)


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
