"""`CallTally`: model calls folded from their `model.call` lines, and what they cost."""

from __future__ import annotations

import pytest

from baton.models.call_tally import CallTally


def test_calls_from_before_cost_usd_are_each_priced_at_their_own_tier() -> None:
    """Two old Haiku 5.5 lines of 60,000-token prompts each pay the lower tier ($0.10 in,
    $0.50 out per MTok), though the two prompts add up to more than 100,000 tokens."""
    tally = CallTally()
    for _ in range(2):
        tally.add({"model": "claude-haiku-5-5", "input_tokens": 60_000, "output_tokens": 1_000})
    assert pytest.approx(2 * (0.006 + 0.0005)) == tally.cost("claude-haiku-5-5")


def test_a_logged_cost_and_an_old_line_priced_from_its_tokens_add_up() -> None:
    """A line's own `cost_usd` is kept beside an older line priced from its tokens: $1.00
    logged plus 1M Sonnet 5.5 input tokens at $2."""
    tally = CallTally()
    tally.add({"model": "claude-sonnet-5-5", "output_tokens": 10, "cost_usd": 1.0})
    tally.add({"model": "claude-sonnet-5-5", "input_tokens": 1_000_000})
    assert pytest.approx(3.0) == tally.cost("claude-sonnet-5-5")
