"""`[prices."<model-id>"]` and `[scenario] max_cost_usd` in baton.toml: merged, checked, used."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.context.usage import Usage
from baton.errors import ConfigError
from baton.models.pricing import PRICES, ModelPrice
from baton.models.protocol import ModelResponse, model_call_fields
from baton.pipeline.config import load_config, parse_config
from baton.pipeline.defaults import role_budget
from baton.pipeline.spend import SpendLedger, record_cost
from baton.runtime.settings import load_settings


def test_an_override_replaces_only_the_kinds_it_names() -> None:
    """A row naming `input` keeps the package's other prices for that model."""
    table = parse_config({"prices": {"claude-sonnet-5-5": {"input": 3.0}}}).price_table
    assert ModelPrice(3.0, 10.0, 2.50, 4.0, 0.20) == table["claude-sonnet-5-5"]
    assert PRICES["claude-opus-5-5"] == table["claude-opus-5-5"]


def test_a_model_the_package_does_not_price_gets_cache_writes_from_its_input() -> None:
    """A new model's 5-minute and 1-hour writes follow its input price (1.25x, 2x)."""
    table = parse_config({"prices": {"my-model": {"input": 2.0, "output": 8.0}}}).price_table
    assert ModelPrice(2.0, 8.0, 2.5, 4.0, None) == table["my-model"]


def test_without_overrides_the_package_table_is_used() -> None:
    """No `[prices]`: the package's own table, unchanged."""
    assert PRICES is parse_config({}).price_table


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"prices": {"m": {"inptu": 1.0}}}, "prices.m.inptu"),
        ({"prices": {"m": {"input": -1.0}}}, "prices.m.input"),
        ({"prices": {"m": {"output": "cheap"}}}, "prices.m.output"),
        ({"scenario": {"max_cost_usd": 0}}, "scenario.max_cost_usd"),
        ({"scenario": {"max_cost": 5}}, "scenario.max_cost"),
    ],
)
def test_a_bad_price_or_cap_is_a_config_error_naming_the_key(
    table: dict[str, object], says: str
) -> None:
    """Unknown keys, negative prices, non-numbers and a cap of 0 are refused by name."""
    with pytest.raises(ConfigError, match=says.replace(".", r"\.")):
        parse_config(table)


def test_baton_toml_prices_and_cap_load_for_the_kernel_and_the_pipeline(tmp_path: Path) -> None:
    """The file's `[prices]` and `[scenario]` pass the kernel's checks and reach the config."""
    (tmp_path / "baton.toml").write_text(
        '[prices."offline-scripted"]\ninput = 1000.0\n[scenario]\nmax_cost_usd = 2.5\n'
    )
    load_settings(tmp_path)
    config = load_config(tmp_path, environ={})
    assert 2.5 == config.scenario.max_cost_usd
    assert 1000.0 == config.price_table["offline-scripted"].input


def test_the_model_call_line_prices_its_usage_with_the_given_table() -> None:
    """`cost_usd` follows the table given; a model without a price is null."""
    usage = Usage(input_tokens=1_000_000, output_tokens=0)
    table = parse_config({"prices": {"offline-scripted": {"input": 7.0}}}).price_table
    budget = role_budget("init")

    def line(model: str) -> object:
        response = ModelResponse(
            content=[], stop_reason="end_turn", usage=usage, model=model, latency_ms=1.0
        )
        fields = model_call_fields(response, budget, turn=0, purpose="turn", prices=table)
        return fields["cost_usd"]

    assert (7.0, None) == (line("offline-scripted"), line("claude-haiku-5-5"))


def test_a_logged_cost_wins_over_the_tokens_and_an_old_line_is_priced() -> None:
    """A line's `cost_usd` is taken as written; a line from before it is priced from tokens."""
    old = {"model": "claude-sonnet-5-5", "input_tokens": 1_000_000, "output_tokens": 0}
    assert (0.5, 2.0, None) == (
        record_cost({**old, "cost_usd": 0.5}, PRICES),
        record_cost(old, PRICES),
        record_cost({**old, "cost_usd": None}, PRICES),
    )


def test_the_ledger_reads_back_what_each_run_spent(tmp_path: Path) -> None:
    """Spend is summed per conversation from the token log, rotated files included."""
    log = tmp_path / "tokens.jsonl"
    call = '{{"event": "model.call", "conversation": "{c}", "model": "x", "cost_usd": {v}}}\n'
    (tmp_path / "tokens.jsonl.1").write_text(call.format(c="a", v=1.5))
    log.write_text(call.format(c="a", v=2.0) + call.format(c="a@2", v="null") + "garbage\n")
    ledger = SpendLedger()
    ledger.read_token_log(log)
    assert (3.5, None, 0.0) == (
        ledger.spend("a").usd,
        ledger.spend("a@2").usd,
        ledger.spend("b").known_usd,
    )
