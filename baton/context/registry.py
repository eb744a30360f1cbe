"""Strategies by name, as config names them (`strategy = "summarize"`).

Adding a strategy is one module and one line here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from baton.context.extract_state import ExtractStateStrategy
from baton.context.server import ServerStrategy
from baton.context.sliding_window import SlidingWindowStrategy
from baton.context.strategy import ContextBudget, ContextStrategy
from baton.context.summarize import SummarizeStrategy
from baton.errors import UsageError

STRATEGIES: dict[str, Callable[..., ContextStrategy]] = {
    "summarize": SummarizeStrategy,
    "sliding_window": SlidingWindowStrategy,
    "extract_state": ExtractStateStrategy,
    "server": ServerStrategy,
}

DEFAULT_STRATEGY = "summarize"


def make_strategy(
    name: str = DEFAULT_STRATEGY, budget: ContextBudget | None = None, **options: Any
) -> ContextStrategy:
    """A new strategy `name` with `budget`; options go to its constructor.

    Common options: `summary_schema`, `on_event`, `clock`, `compact_prompt`; `stride` for
    `summarize`, `server` and `extract_state`, `strip_batch_tokens` and `tool_result_clearing`
    for `summarize` and `server`, `refill` for `sliding_window`.
    """
    try:
        factory = STRATEGIES[name]
    except KeyError:
        raise UsageError(
            f"unknown context strategy {name!r}; choose one of {', '.join(sorted(STRATEGIES))}"
        ) from None
    strategy: ContextStrategy = factory(budget, **options)
    return strategy
