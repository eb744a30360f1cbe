"""The pipeline's agents as shipped: each role's budget, model and thinking
(docs/models.md, "Defaults" and "Budgets"); `[actors.<name>]` keys override them."""

from __future__ import annotations

from typing import Any

from baton.context.strategy import ContextBudget
from baton.models.rules import CURRENT_MODELS

DEFAULT_BUDGETS: dict[str, dict[str, int]] = {
    "init": {"context_window": 1_000_000, "compact_threshold": 150_000, "keep_recent_steps": 3},
    "execute": {"context_window": 1_000_000, "compact_threshold": 700_000, "keep_recent_steps": 5},
    "scheduler": {
        "context_window": 1_000_000,
        "compact_threshold": 150_000,
        "keep_recent_steps": 3,
    },
}
"""The built-in agents' budgets. The thresholds are absolute: they bound what a turn costs
and how far a model reads into a long context, not what the window can hold
(docs/models.md, "Budgets")."""


def role_budget(role: str, **overrides: object) -> ContextBudget:
    """The shipped budget of `init`, `execute` or `scheduler` (any other role gets init's)."""
    return ContextBudget.model_validate(
        {**DEFAULT_BUDGETS.get(role, DEFAULT_BUDGETS["init"]), **overrides}
    )


DEFAULT_AGENTS: dict[str, dict[str, Any]] = {
    # Opus always thinks; Execute thinks when it judges a step worth it; the Scheduler's
    # one-line task summaries need none (docs/models.md). Init and Execute strip older tool
    # results in batches, so the prompt cache holds between them (docs/context.md,
    # "summarize"); the sizes are where bench/token_cost.py bills least.
    "init": {
        "model": CURRENT_MODELS["opus"],
        "thinking": "adaptive",
        "stride": 8,
        "strip_batch_tokens": 30_000,
        **DEFAULT_BUDGETS["init"],
    },
    "execute": {
        "model": CURRENT_MODELS["sonnet"],
        "thinking": "adaptive",
        "stride": 10,
        "strip_batch_tokens": 40_000,
        **DEFAULT_BUDGETS["execute"],
    },
    "scheduler": {
        "model": CURRENT_MODELS["haiku"],
        "thinking": "off",
        **DEFAULT_BUDGETS["scheduler"],
    },
}
"""The built-in agents' models, thinking and budgets; `[actors.<name>]` keys override them."""
