"""The agents' models, checked once at start: retired ones stop, deprecated ones warn.

Online, each agent's model is looked up in the Models API (`Model.limits()`, cached, so the
agents' own start reuses it). A model the API calls retired, or does not know (HTTP 404), is
a `RetiredModelError` naming the actor, the model and the current model of its line to set
instead; a deprecated one is a warning with its retirement date and the same advice. The
thinking setting and effort level, and the server-side context management the agent's
`strategy = "server"` or `tool_result_clearing = "server"` needs, are checked against what
the model accepts (its capabilities online, what baton knows of its id offline), so a
setting the API would refuse on every call stops the start instead. Offline nothing is
looked up: no network, no key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import anyio

from baton._log import get_logger
from baton.context.server_edits import CLEAR_TOOL_USES_EDIT, COMPACT_EDIT
from baton.context.strategy import Effort, Thinking
from baton.errors import ConfigError
from baton.models.errors import RetiredModelError
from baton.models.protocol import Model, ModelLimits
from baton.models.rules import (
    CURRENT_MODELS,
    EFFORT_LEVELS,
    ModelRules,
    parse_model_id,
    rules_for,
)

log = get_logger(__name__)


class ModelSettings(Protocol):
    """What an agent's configuration says of its model (an `AgentConfig` has all of it)."""

    @property
    def model(self) -> str: ...
    @property
    def thinking(self) -> Thinking: ...
    @property
    def effort(self) -> Effort | None: ...
    @property
    def strategy(self) -> str: ...
    @property
    def tool_result_clearing(self) -> str: ...


@dataclass(frozen=True, slots=True)
class AgentModel:
    """One agent's name, its model settings and the model client it will use."""

    actor: str
    config: ModelSettings
    model: Model


async def check_agent_models(agents: Sequence[AgentModel]) -> list[str]:
    """Refuse retired models and thinking settings a model does not take; return one
    warning line per deprecated model (also logged as `model.deprecated`)."""
    warnings: list[str] = []
    current: dict[str, str] | None = None
    # Every lookup at once: a slow or unreachable Models API costs the start one timeout.
    found: dict[int, ModelLimits] = {}

    async def look_up(model: Model) -> None:
        found[id(model)] = await model.limits()

    async with anyio.create_task_group() as lookups:
        for model in {id(agent.model): agent.model for agent in agents}.values():
            lookups.start_soon(look_up, model)
    unanswered: set[str] = set()
    for agent in agents:
        limits = found[id(agent.model)]
        if limits.unanswered is not None and agent.config.model not in unanswered:
            unanswered.add(agent.config.model)
            warnings.append(
                f"the Models API did not answer for {agent.config.model} "
                f"({limits.unanswered}); using the configured context window "
                f"({limits.context_window:,} tokens) — check ANTHROPIC_BASE_URL and the network"
            )
        online = limits.source == "models_api"
        if online and (not limits.available or limits.lifecycle in ("retired", "deprecated")):
            if current is None:
                current = await _current_models(agent.model)
            replacement = _replacement(limits, agent.config.model, current)
            if not limits.available or limits.lifecycle == "retired":
                reason = (
                    "is retired"
                    if limits.available
                    else "is not known to the Models API (retired, or misspelt)"
                )
                raise RetiredModelError(agent.actor, agent.config.model, replacement, reason)
            warnings.append(_deprecation(agent, limits, replacement))
        rules = limits.rules if online and limits.rules is not None else None
        check_thinking(agent.actor, agent.config, rules or rules_for(agent.config.model))
        check_context_edits(agent.actor, agent.config, rules or rules_for(agent.config.model))
    return warnings


async def _current_models(model: Model) -> dict[str, str]:
    listing = getattr(model, "current_models", None)
    listed: dict[str, str] = await listing() if listing is not None else {}
    return {**CURRENT_MODELS, **listed}


def _replacement(limits: ModelLimits, model: str, current: dict[str, str]) -> str | None:
    line = limits.line
    if line is None and (parsed := parse_model_id(model)) is not None:
        line = parsed[0]  # a guess from the id, only to word the advice
    replacement = current.get(line) if line is not None else None
    return replacement if replacement != model else None


def _deprecation(agent: AgentModel, limits: ModelLimits, replacement: str | None) -> str:
    when = f"retires on {limits.retires_at:%Y-%m-%d}" if limits.retires_at else "will retire"
    advice = (
        f'set [actors.{agent.actor}] model = "{replacement}" in baton.toml'
        if replacement
        else f"set [actors.{agent.actor}] model in baton.toml to a current model"
    )
    log.warning(
        "model.deprecated",
        actor=agent.actor,
        model=agent.config.model,
        retires_at=limits.retires_at.isoformat() if limits.retires_at else None,
        replacement=replacement,
    )
    return f"actor {agent.actor!r}: model {agent.config.model!r} is deprecated and {when}; {advice}"


def check_thinking(actor: str, config: ModelSettings, rules: ModelRules) -> None:
    """`ConfigError` when the model refuses the actor's thinking setting or effort level."""
    model = config.model
    where = f"[actors.{actor}]"
    thinking = config.thinking
    types = rules.thinking_types
    if thinking == "off" and rules.always_thinks:
        raise ConfigError(
            f"actor {actor!r}: {model} always thinks, so thinking = 'off' cannot be honoured; "
            f"set {where} thinking = 'adaptive' (a lower effort makes it think less)"
        )
    if thinking == "adaptive" and "adaptive" not in types:
        instead = "a budget such as 8000" if "enabled" in types else "'off'"
        raise ConfigError(
            f"actor {actor!r}: {model} does not take adaptive thinking; set {where} "
            f"thinking = {instead}"
        )
    if isinstance(thinking, int) and "enabled" not in types:
        raise ConfigError(
            f"actor {actor!r}: {model} takes no manual thinking budget; set {where} "
            "thinking = 'adaptive' (and effort to think less or more)"
        )
    if config.effort is not None and config.effort not in rules.effort_levels:
        accepted = [level for level in EFFORT_LEVELS if level in rules.effort_levels]
        raise ConfigError(
            f"actor {actor!r}: {model} does not take effort {config.effort!r}; set {where} "
            f"effort to one of {', '.join(accepted)}"
            if accepted
            else f"actor {actor!r}: {model} takes no effort level; remove {where} effort"
        )


def check_context_edits(actor: str, config: ModelSettings, rules: ModelRules) -> None:
    """`ConfigError` when the actor's settings need a server-side context edit the model
    does not support (docs/models.md, "The lifecycle check at start")."""
    needs = (
        ("strategy", config.strategy, COMPACT_EDIT, '"summarize"'),
        ("tool_result_clearing", config.tool_result_clearing, CLEAR_TOOL_USES_EDIT, '"client"'),
    )
    for setting, value, edit, instead in needs:
        if value == "server" and edit not in rules.context_edits:
            raise ConfigError(
                f"actor {actor!r}: {config.model} does not support {edit}, which "
                f'{setting} = "server" needs; set [actors.{actor}] {setting} = {instead} in '
                "baton.toml, or a model that supports it"
            )
