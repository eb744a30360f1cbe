"""Model calls added up from their `model.call` token-log lines: how many, the four token
counts and what they cost (docs/models.md, "Prices"). The end-of-run summary and the report
both fold lines into it, so the two always agree."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from baton.context.usage import Usage
from baton.models.pricing import PRICES, ModelPrice, cost_usd


def token_count(record: Mapping[str, Any], key: str) -> int:
    """`record[key]` when it is a token count, else 0 (a damaged or older line)."""
    value = record.get(key)
    # `type() is`, not isinstance: a bool is an int to Python, never a token count.
    return value if type(value) is int else 0


@dataclass(slots=True)
class CallTally:
    """Calls of one model (or of several, for a total) and their tokens."""

    calls: int = 0
    input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    output_tokens: int = 0
    logged_calls: int = 0  # calls whose line carries `cost_usd`
    logged_usd: float = 0.0
    logged_unknown: bool = False  # a `cost_usd` of null: a price was unknown

    def add(self, record: Mapping[str, Any]) -> None:
        """Fold in one `model.call` line."""
        self.calls += 1
        self.input_tokens += token_count(record, "input_tokens")
        self.cache_creation_input_tokens += token_count(record, "cache_creation_input_tokens")
        self.cache_read_input_tokens += token_count(record, "cache_read_input_tokens")
        self.output_tokens += token_count(record, "output_tokens")
        if "cost_usd" in record:
            self.logged_calls += 1
            logged = record["cost_usd"]
            if isinstance(logged, int | float) and not isinstance(logged, bool):
                self.logged_usd += logged
            else:
                self.logged_unknown = True

    def merge(self, other: CallTally) -> None:
        """Add `other`'s calls and tokens (for a total row; its cost is summed apart)."""
        self.calls += other.calls
        self.input_tokens += other.input_tokens
        self.cache_creation_input_tokens += other.cache_creation_input_tokens
        self.cache_read_input_tokens += other.cache_read_input_tokens
        self.output_tokens += other.output_tokens

    def usage(self) -> Usage:
        """The four counts, as the pricing takes them."""
        return Usage(
            input_tokens=self.input_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens,
            output_tokens=self.output_tokens,
        )

    def cost(self, model: str, prices: Mapping[str, ModelPrice] = PRICES) -> float | None:
        """Estimated USD; None when a price it needs is unknown. The calls' own `cost_usd`
        when every line has one (baton.toml's `[prices]` are in it), else priced from the
        tokens with `prices` (lines from before `cost_usd`)."""
        if self.logged_calls == self.calls:
            return None if self.logged_unknown else self.logged_usd
        return cost_usd(model, self.usage(), prices=prices)
