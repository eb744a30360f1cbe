"""Estimated cost of model calls from list prices (docs/models.md, "Prices")."""

from __future__ import annotations

import pytest

from baton.context.usage import Usage
from baton.models.pricing import PRICES, UNKNOWN, ModelPrice, cost_usd, price_for


def usage(fresh: int = 0, written: int = 0, read: int = 0, output: int = 0) -> Usage:
    return Usage(
        input_tokens=fresh,
        cache_creation_input_tokens=written,
        cache_read_input_tokens=read,
        output_tokens=output,
    )


def test_opus_5_5_costs_each_kind_of_token_at_its_price() -> None:
    """Opus 5.5: 1M in at $4, 200K 5-minute writes at 1.25 x $4, 500K reads at $0.20, 100K out
    at $20: 4 + 1 + 0.10 + 2 = $7.10."""
    cost = cost_usd("claude-opus-5-5", usage(1_000_000, 200_000, 500_000, 100_000))
    assert pytest.approx(7.10) == cost


def test_sonnet_5_5_uses_its_stated_cache_write_prices_for_each_lifetime() -> None:
    """Sonnet 5.5: 400K writes cost $2.50/MTok for 5 minutes ($1.00), $4/MTok for an hour
    ($1.60); plus 100K in at $2, 1M reads at $0.20, 10K out at $10."""
    spent = usage(100_000, 400_000, 1_000_000, 10_000)
    five_minutes = cost_usd("claude-sonnet-5-5", spent)
    one_hour = cost_usd("claude-sonnet-5-5", spent, cache_ttl="1h")
    assert (pytest.approx(1.50), pytest.approx(2.10)) == (five_minutes, one_hour)


def test_cache_writes_default_to_1_25_times_input_for_five_minutes() -> None:
    """A row stating only in/out prices writes 5-minute cache at 1.25x input, 1 hour at 2x."""
    price = ModelPrice.listed(4.0, 20.0, cache_read=0.2)
    assert (5.0, 8.0) == (price.cache_write_5m, price.cache_write_1h)


def test_a_model_without_a_stated_price_costs_dash_not_a_guess() -> None:
    """Haiku 5.5 has no price here: any tokens make its cost None; no tokens cost nothing."""
    assert (None, 0.0) == (
        cost_usd("claude-haiku-5-5", usage(output=1)),
        cost_usd("claude-haiku-5-5", usage()),
    )


def test_a_price_left_out_only_matters_when_that_kind_of_token_was_used() -> None:
    """Fable 5.1 ($10 / $50, no cache-read price): in and out are priced, a cache read is not."""
    priced = cost_usd("claude-fable-5-1", usage(fresh=1_000, output=1_000))
    unpriced = cost_usd("claude-fable-5-1", usage(fresh=1_000, read=1))
    assert (pytest.approx(0.06), None) == (priced, unpriced)


def test_dated_ids_take_their_models_row_and_unknown_ids_are_unknown() -> None:
    """`claude-opus-5-5-20261101` is priced as Opus 5.5; an id baton never heard of is UNKNOWN."""
    assert (PRICES["claude-opus-5-5"], UNKNOWN) == (
        price_for("claude-opus-5-5-20261101"),
        price_for("someone-elses-model"),
    )


def test_the_offline_scripted_model_is_free() -> None:
    """The offline model calls no API: a million of every kind of token costs $0."""
    assert 0.0 == cost_usd("offline-scripted", usage(10**6, 10**6, 10**6, 10**6))
