"""Estimated cost of model calls from list prices (docs/models.md, "Prices")."""

from __future__ import annotations

import dataclasses

import pytest

from baton.context.usage import Usage
from baton.models.pricing import (
    PRICES,
    UNKNOWN,
    LongPromptPrice,
    ModelPrice,
    cost_usd,
    price_for,
)


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
    """Haiku 4.5 has no price here: any tokens make its cost None; no tokens cost nothing."""
    assert (None, 0.0) == (
        cost_usd("claude-haiku-4-5", usage(output=1)),
        cost_usd("claude-haiku-4-5", usage()),
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


def test_haiku_5_5_costs_a_short_prompt_at_its_lower_tier() -> None:
    """Haiku 5.5, a 20K-token prompt (12K in, 5K 5-minute writes, 3K reads) and 400 out:
    12K x $0.10 + 5K x $0.125 + 3K x $0.01 + 400 x $0.50 = $0.002055; dated ids alike."""
    spent = usage(12_000, 5_000, 3_000, 400)
    assert (pytest.approx(0.002055), pytest.approx(0.002055)) == (
        cost_usd("claude-haiku-5-5", spent),
        cost_usd("claude-haiku-5-5-20261007", spent),
    )


def test_haiku_5_5_prices_every_token_of_a_long_prompt_at_its_upper_tier() -> None:
    """Over 100,000 prompt tokens, input, cache writes (5 minutes, 1 hour), cache reads and
    output all cost the upper tier: $0.50, $0.625, $1.00, $0.05 and $2.50 per MTok."""
    spent = usage(100_000, 20_000, 80_000, 10_000)
    five_minutes = 0.05 + 0.0125 + 0.004 + 0.025
    one_hour = 0.05 + 0.02 + 0.004 + 0.025
    assert (pytest.approx(five_minutes), pytest.approx(one_hour)) == (
        cost_usd("claude-haiku-5-5", spent),
        cost_usd("claude-haiku-5-5", spent, cache_ttl="1h"),
    )


@pytest.mark.parametrize(
    ("spent", "tier"),
    [
        (usage(100_000), "lower"),  # exactly the threshold: "up to 100,000"
        (usage(100_001), "upper"),
        (usage(60_000, 30_000, 10_000), "lower"),
        (usage(60_000, 30_000, 10_001), "upper"),  # a cache read makes the prompt longer
        (usage(1, 0, 100_000), "upper"),
        (usage(99_999, 0, 0, 50_000), "lower"),  # output is no part of the prompt
    ],
)
def test_the_tier_is_chosen_by_the_whole_prompt_at_and_around_the_threshold(
    spent: Usage, tier: str
) -> None:
    """A prompt of up to 100,000 tokens (uncached input, cache writes and cache reads added
    up; output aside) pays Haiku 5.5's lower tier, a longer one its upper tier."""
    row = PRICES["claude-haiku-5-5"]
    assert row.long_prompt is not None
    rates = {"lower": row, "upper": row.long_prompt.price}[tier]
    untiered = {"m": dataclasses.replace(rates, long_prompt=None)}
    expected = cost_usd("m", spent, prices=untiered)
    assert expected is not None
    assert pytest.approx(expected) == cost_usd("claude-haiku-5-5", spent)


def test_a_price_is_known_only_when_its_long_prompt_tier_is_too() -> None:
    """A row whose upper tier lacks a kind's price is not known; a cost there is None."""
    partial = ModelPrice.listed(
        1.0, 5.0, cache_read=0.1, long_prompt=LongPromptPrice(10, ModelPrice.listed(2.0, 10.0))
    )
    table = {"m": partial}
    assert (False, True, pytest.approx(0.0000011), None) == (
        partial.known,
        PRICES["claude-haiku-5-5"].known,
        cost_usd("m", usage(1, 0, 1), prices=table),
        cost_usd("m", usage(1, 0, 10), prices=table),
    )
