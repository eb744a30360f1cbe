"""Model calls added up from their `model.call` token-log lines: how many, the four token
counts and what they cost (docs/models.md, "Prices"). The end-of-run summary and the report
both fold lines into it, so the two always agree.

Each call is priced on its own, never the summed tokens: a long-prompt tier is chosen by one
request's prompt, and a sum of short prompts may be longer than a tier's threshold."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from baton.context.usage import Usage
from baton.models.pricing import PRICES, ModelPrice, cost_usd

USAGE_KEYS = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
)
"""A `model.call` line's four token counts, as `Usage` names them."""


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
    logged_usd: float = 0.0
    logged_unknown: bool = False  # a `cost_usd` of null: a price was unknown
    # The calls whose line has no `cost_usd` (written before it existed), priced by `cost`.
    unlogged: list[Usage] = field(default_factory=list)

    def add(self, record: Mapping[str, Any]) -> None:
        """Fold in one `model.call` line."""
        counts = {key: token_count(record, key) for key in USAGE_KEYS}
        self.calls += 1
        self.input_tokens += counts["input_tokens"]
        self.cache_creation_input_tokens += counts["cache_creation_input_tokens"]
        self.cache_read_input_tokens += counts["cache_read_input_tokens"]
        self.output_tokens += counts["output_tokens"]
        if "cost_usd" not in record:
            self.unlogged.append(Usage(**counts))
        else:
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

    def cost(self, model: str, prices: Mapping[str, ModelPrice] = PRICES) -> float | None:
        """Estimated USD; None when a price it needs is unknown. Each call's own `cost_usd`
        (baton.toml's `[prices]` are in it), and a call from before `cost_usd` priced from
        its tokens with `prices`."""
        if self.logged_unknown:
            return None
        total = self.logged_usd
        for call in self.unlogged:
            cost = cost_usd(model, call, prices=prices)
            if cost is None:
                return None
            total += cost
        return total
