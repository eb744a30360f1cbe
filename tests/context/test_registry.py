"""Strategies by name, the protocol they satisfy, and budgets from the actor config."""

from __future__ import annotations

import pytest

from baton.context.extract_state import ExtractStateStrategy
from baton.context.registry import STRATEGIES, make_strategy
from baton.context.sliding_window import SlidingWindowStrategy
from baton.context.strategy import ContextBudget, ContextStrategy
from baton.context.summarize import SummarizeStrategy
from baton.errors import UsageError
from baton.pipeline.config import parse_config
from baton.pipeline.defaults import role_budget


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("summarize", SummarizeStrategy),
        ("sliding_window", SlidingWindowStrategy),
        ("extract_state", ExtractStateStrategy),
    ],
)
def test_each_config_name_builds_its_strategy(name: str, kind: type) -> None:
    """The names config accepts map to the three strategies, each a ContextStrategy."""
    strategy = make_strategy(name, role_budget("execute"))
    assert isinstance(strategy, kind)
    assert isinstance(strategy, ContextStrategy)
    assert (name, 5) == (strategy.name, strategy.budget.keep_recent_steps)


def test_an_unknown_name_lists_the_known_ones() -> None:
    """A typo is a UsageError that says what would have worked."""
    with pytest.raises(UsageError, match="extract_state, server, sliding_window, summarize"):
        make_strategy("summarise")


def test_the_default_is_summarize() -> None:
    """`summarize` unless config says otherwise (docs/context.md, "Strategies")."""
    assert isinstance(make_strategy(), SummarizeStrategy)
    assert {"summarize", "sliding_window", "extract_state", "server"} == set(STRATEGIES)


def test_budget_reads_an_actor_config() -> None:
    """`ContextBudget.model_validate(config, from_attributes=True)` takes the shared fields."""
    config = parse_config(
        {"actors": {"init": {"summary_role": "system", "summary_timeout_s": 30}}}
    ).agent("init")
    budget = ContextBudget.model_validate(config, from_attributes=True)
    assert (1_000_000, 150_000, 3, "system", 30.0, "adaptive") == (
        budget.context_window,
        budget.compact_threshold,
        budget.keep_recent_steps,
        budget.summary_role,
        budget.summary_timeout_s,
        budget.thinking,
    )


@pytest.mark.parametrize(("option", "value"), [("stride", 0), ("refill", 0.0)])
def test_bad_options_are_refused(option: str, value: float) -> None:
    """Stride below 1 or refill outside (0, 1] would break the assembly."""
    name = "sliding_window" if option == "refill" else "summarize"
    with pytest.raises(UsageError, match=option):
        make_strategy(name, **{option: value})
