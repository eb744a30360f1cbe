"""`[prices."<model-id>"]` and `[scenario] max_cost_usd` in baton.toml: merged, checked, used."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from baton.context.usage import Usage
from baton.errors import ConfigError
from baton.models.price_config import missing_price_lines
from baton.models.pricing import PRICES, UNKNOWN, LongPromptPrice, ModelPrice
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


def test_an_override_can_give_a_model_a_long_prompt_tier() -> None:
    """`[prices."m".long_prompt]` names its threshold and its prices; cache writes follow
    its input as the row's follow the row's."""
    row = {"input": 1.0, "output": 5.0, "cache_read": 0.1}
    tier = {"over_tokens": 200_000, "input": 2.0, "output": 10.0, "cache_read": 0.2}
    table = parse_config({"prices": {"m": {**row, "long_prompt": tier}}}).price_table
    upper = ModelPrice(2.0, 10.0, 2.5, 4.0, 0.2)
    assert ModelPrice(1.0, 5.0, 1.25, 2.0, 0.1, LongPromptPrice(200_000, upper)) == table["m"]


def test_an_override_of_a_tiered_row_keeps_the_tier_it_does_not_name() -> None:
    """Haiku 5.5's `input` overridden keeps its upper tier; a `long_prompt` table naming a
    new threshold and `output` keeps that tier's other prices."""
    shipped = PRICES["claude-haiku-5-5"]
    assert shipped.long_prompt is not None
    upper = shipped.long_prompt.price
    table = parse_config(
        {
            "prices": {
                "claude-haiku-5-5": {"input": 0.2},
                "claude-haiku-5-5-20261007": {
                    "long_prompt": {"over_tokens": 150_000, "output": 3.0}
                },
            }
        }
    ).price_table
    raised = table["claude-haiku-5-5-20261007"].long_prompt
    assert (
        0.2,
        shipped.long_prompt,
        LongPromptPrice(150_000, dataclasses.replace(upper, output=3.0)),
    ) == (
        table["claude-haiku-5-5"].input,
        table["claude-haiku-5-5"].long_prompt,
        raised,
    )


def test_the_lines_to_add_name_each_kind_without_a_price() -> None:
    """An unknown model needs input, output and cache reads (its writes follow input); Fable
    5.1 only its cache reads; a row with a price for everything needs nothing."""
    upper = LongPromptPrice(9, ModelPrice.listed(1.0, 2.0))
    tiered = ModelPrice.listed(0.5, 1.0, cache_read=0.05, long_prompt=upper)
    assert (
        [
            '[prices."x"]',
            "input = <USD per MTok>",
            "output = <USD per MTok>",
            "cache_read = <USD per MTok>",
        ],
        ['[prices."claude-fable-5-1"]', "cache_read = <USD per MTok>"],
        ['[prices."t".long_prompt]', "over_tokens = 9", "cache_read = <USD per MTok>"],
        [],
    ) == (
        missing_price_lines("x", UNKNOWN),
        missing_price_lines("claude-fable-5-1", PRICES["claude-fable-5-1"]),
        missing_price_lines("t", tiered),
        missing_price_lines("claude-haiku-5-5", PRICES["claude-haiku-5-5"]),
    )


def test_without_overrides_the_package_table_is_used() -> None:
    """No `[prices]`: the package's own table, unchanged."""
    assert PRICES is parse_config({}).price_table


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"prices": {"m": {"inptu": 1.0}}}, "prices.m.inptu"),
        ({"prices": {"m": {"input": -1.0}}}, "prices.m.input"),
        ({"prices": {"m": {"output": "cheap"}}}, "prices.m.output"),
        ({"prices": {"m": {"long_prompt": {"input": 1.0}}}}, "prices.m.long_prompt.over_tokens"),
        (
            {"prices": {"m": {"long_prompt": {"over_tokens": 0}}}},
            "prices.m.long_prompt.over_tokens",
        ),
        (
            {"prices": {"m": {"long_prompt": {"over_tokens": 1.5}}}},
            "prices.m.long_prompt.over_tokens",
        ),
        ({"prices": {"m": {"long_prompt": {"over_tokens": 9, "inptu": 1}}}}, "long_prompt.inptu"),
        ({"prices": {"m": {"long_prompt": {"over_tokens": 9, "input": -1}}}}, "long_prompt.input"),
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
    """The file's `[prices]` (a long-prompt tier too) and `[scenario]` pass the kernel's
    checks and reach the config."""
    (tmp_path / "baton.toml").write_text(
        '[prices."offline-scripted"]\ninput = 1000.0\n'
        '[prices."offline-scripted".long_prompt]\nover_tokens = 50_000\ninput = 2000.0\n'
        "[scenario]\nmax_cost_usd = 2.5\n"
    )
    load_settings(tmp_path)
    config = load_config(tmp_path, environ={})
    tier = config.price_table["offline-scripted"].long_prompt
    assert 2.5 == config.scenario.max_cost_usd
    assert 1000.0 == config.price_table["offline-scripted"].input
    assert tier is not None
    assert (50_000, 2000.0, 2500.0) == (
        tier.over_tokens,
        tier.price.input,
        tier.price.cache_write_5m,
    )


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

    assert (7.0, None) == (line("offline-scripted"), line("claude-haiku-4-5"))


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
