"""The context policies `baton cost --what-if` bills a run under, per agent (docs/context.md,
"What a run would have cost"): the one the agent is configured with (the run's), the two
plain baselines (keep all, per-turn stripping), each strategy, and the server's compaction
and clearing.

A policy is a strategy built for a conversation's budget. The agent's own options (stride,
strip batch) go to every strategy that takes them, so a row differs from the run's in one
thing: how the history is assembled and compacted. A policy the same as the run's is not
listed twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from baton.agents.agent_config import AgentConfig
from baton.context.baselines import KeepAll, PerTurnStrip
from baton.context.registry import make_strategy
from baton.context.server_edits import MIN_COMPACT_TRIGGER
from baton.context.strategy import ContextBudget, ContextStrategy
from baton.context.summary_format import SummaryBase

Build = Callable[[ContextBudget], ContextStrategy]


@dataclass(frozen=True)
class Policy:
    """One way to assemble and compact an agent's context: `key` names it in JSON, `label`
    in the table; `build` makes its strategy for a conversation's budget; `used`: the run's
    own."""

    key: str
    label: str
    build: Build
    used: bool = False
    server: bool = False  # needs the server's context management simulated


def _options_text(options: dict[str, Any]) -> str:
    shown = [
        f"{key} {value:,}" if isinstance(value, int) else f"{key} {value}"
        for key, value in options.items()
        if value is not None and key != "tool_result_clearing"  # the label names it
    ]
    return f" ({', '.join(shown)})" if shown else ""


def _server_budget(budget: ContextBudget) -> ContextBudget:
    """`budget` with its threshold raised to the least the Messages API compacts at."""
    if budget.compact_threshold >= MIN_COMPACT_TRIGGER:
        return budget
    return budget.model_copy(update={"compact_threshold": MIN_COMPACT_TRIGGER})


def _key(name: str, options: dict[str, Any]) -> tuple[str, tuple[tuple[str, Any], ...]]:
    return name, tuple(sorted(options.items()))


def policies_for(config: AgentConfig, schema: type[SummaryBase]) -> list[Policy]:
    """The policies an agent configured as `config` is billed under, the run's first."""

    def strategy(name: str, options: dict[str, Any]) -> Build:
        def build(budget: ContextBudget) -> ContextStrategy:
            if name == "server":  # the API compacts at 50,000 input tokens at the least
                budget = _server_budget(budget)
            return make_strategy(name, budget, summary_schema=schema, **options)

        return build

    used_options = config.strategy_options
    server_side = config.strategy == "server" or config.tool_result_clearing == "server"
    clearing = ", server clearing" if config.tool_result_clearing == "server" else ""
    policies = [
        Policy(
            "used",
            f"{config.strategy}{clearing}{_options_text(used_options)}",
            strategy(config.strategy, used_options),
            used=True,
            server=server_side,
        ),
        Policy("keep-all", "keep all", lambda budget: KeepAll(budget, summary_schema=schema)),
        Policy(
            "per-turn-strip",
            "per-turn strip",
            lambda budget: PerTurnStrip(budget, summary_schema=schema),
        ),
    ]
    batches = {"stride": config.stride, "strip_batch_tokens": config.strip_batch_tokens}
    client, server = {"tool_result_clearing": "client"}, {"tool_result_clearing": "server"}
    others: list[tuple[str, str, str, dict[str, Any]]] = [
        ("summarize", "summarize", "summarize", {**batches, **client}),
        ("summarize-per-turn", "summarize, per-turn rule", "summarize", client),
        ("sliding_window", "sliding_window", "sliding_window", {}),
        ("extract_state", "extract_state", "extract_state", {"stride": config.stride}),
        ("server-compaction", "server compaction", "server", {**batches, **client}),
        ("server-clearing", "server clearing", "summarize", {**batches, **server}),
    ]
    seen = {_key(config.strategy, used_options)}
    for key, label, name, options in others:
        if _key(name, options) in seen:
            continue
        seen.add(_key(name, options))
        policies.append(
            Policy(
                key,
                f"{label}{_options_text(options)}",
                strategy(name, options),
                server=key.startswith("server"),
            )
        )
    return policies
