"""What each Claude model accepts in a request, and the check that refuses the rest.

The Messages API answers some requests with a 400 only on some models: a forced
`tool_choice` on Opus 5.5 and Sonnet 5.5 (and with thinking on anywhere), an assistant
prefill on the 5.x generation, manual thinking budgets where only adaptive thinking exists,
`disabled` thinking on the models that always think. Sampling parameters are refused on
every model by the API version the SDK speaks, and here too. `rules_for(model)` knows these
from the model id; `ModelRules.with_capabilities` replaces the thinking, effort and
server-side context-management part (`context_edits`) with what the Models API reports at run
time, which is the authority when it is reachable.
`request_problems` is the check a client runs before it sends, so such a request fails here
with a message that says what to change, not as a 400 (docs/models.md explains each rule).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from baton.context.server_edits import (
    CLEAR_THINKING_EDIT,
    CLEAR_TOOL_USES_EDIT,
    COMPACT_EDIT,
)
from baton.context.validation import SAMPLING_PARAMETERS

ThinkingType = str
"""A `thinking.type` the API knows: `adaptive`, `enabled`, `disabled`, `between_tools`."""

ALL_THINKING_TYPES = frozenset({"adaptive", "enabled", "disabled", "between_tools"})
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")
FORCED_TOOL_CHOICES = frozenset({"any", "tool"})
# What a model is known to take before its capabilities are read (`xhigh` only some do).
_BASIC_EFFORT = frozenset({"low", "medium", "high", "max"})
CONTEXT_EDITS = frozenset({CLEAR_THINKING_EDIT, CLEAR_TOOL_USES_EDIT, COMPACT_EDIT})
"""The server-side context-management edits (docs/context.md, "Server-side context
management"); compaction came with the 4.6 generation, clearing with the 4.x models."""
_CLEARING_EDITS = frozenset({CLEAR_THINKING_EDIT, CLEAR_TOOL_USES_EDIT})
# What baton sets to avoid each edit a model lacks (docs/models.md, "The lifecycle check at
# start").
_EDIT_ADVICE = {
    COMPACT_EDIT: 'set strategy = "summarize" in [actors.<name>]',
    CLEAR_TOOL_USES_EDIT: 'set tool_result_clearing = "client" in [actors.<name>]',
    CLEAR_THINKING_EDIT: "leave the edit out",
}
NEW_TOKENIZER_RATIO = 1.3
"""Tokens the tokenizer of the 4.7 generation on counts per token of the older one."""

CURRENT_MODELS: dict[str, str] = {
    "opus": "claude-opus-5-5",
    "sonnet": "claude-sonnet-5-5",
    "haiku": "claude-haiku-5-5",
    "fable": "claude-fable-5-1",
}
"""The current model of each line as of November 2026: the defaults, and the advice when the
Models API cannot be asked for its own list."""

_MODEL_ID = re.compile(
    r"^claude-(?P<line>opus|sonnet|haiku|fable|mythos)-(?P<major>\d+)"
    r"(?:-(?P<minor>\d{1,2}))?(?:-\d{8})?$"
)


class ModelRules(BaseModel):
    """The request rules of one model (permissive for ids baton does not recognise)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    line: str | None = None
    generation: tuple[int, int] | None = None
    always_thinks: bool = False
    thinking_types: frozenset[str] = ALL_THINKING_TYPES
    effort_levels: frozenset[str] = frozenset(EFFORT_LEVELS)
    forced_tool_choice: bool = True
    prefill: bool = True
    tokenizer_ratio: float = 1.0
    min_cache_tokens: int = 1024
    context_edits: frozenset[str] = CONTEXT_EDITS

    @property
    def thinks_by_default(self) -> bool:
        """Whether a request without a `thinking` field makes the model think."""
        return self.always_thinks

    def with_capabilities(self, capabilities: Mapping[str, Any] | None) -> ModelRules:
        """These rules with the thinking types, effort levels and context-management edits
        the Models API reported."""
        if not capabilities:
            return self
        update: dict[str, Any] = {}
        thinking = capabilities.get("thinking")
        if isinstance(thinking, Mapping) and isinstance(thinking.get("types"), Mapping):
            types = frozenset(
                name for name, support in thinking["types"].items() if _supported(support)
            )
            if thinking.get("supported") is False:
                types = frozenset({"disabled"})
            update["thinking_types"] = types
            update["always_thinks"] = "disabled" not in types
        effort = capabilities.get("effort")
        if isinstance(effort, Mapping):
            update["effort_levels"] = (
                frozenset(level for level in EFFORT_LEVELS if _supported(effort.get(level)))
                if effort.get("supported")
                else frozenset()
            )
        edits = capabilities.get("context_management")
        if isinstance(edits, Mapping):
            # An edit the listing does not mention keeps what the id says of it.
            update["context_edits"] = (
                frozenset(
                    name
                    for name in CONTEXT_EDITS
                    if (
                        _supported(edits[name])
                        if edits.get(name) is not None
                        else name in self.context_edits
                    )
                )
                if edits.get("supported") is not False
                else frozenset()
            )
        return self.model_copy(update=update)


def _supported(support: Any) -> bool:
    if isinstance(support, Mapping):
        return bool(support.get("supported"))
    return bool(getattr(support, "supported", support))


def parse_model_id(model: str) -> tuple[str, tuple[int, int]] | None:
    """`claude-opus-5-5` → (`opus`, (5, 5)); None for an id of no known shape."""
    match = _MODEL_ID.match(model)
    if match is None:
        return None
    return match["line"], (int(match["major"]), int(match["minor"] or 0))


def rules_for(model: str) -> ModelRules:
    """What baton knows of `model`'s request rules from its id (docs/models.md)."""
    parsed = parse_model_id(model)
    if parsed is None:
        return ModelRules(model=model)
    line, generation = parsed
    fifth = generation >= (5, 0)
    always_thinks = line in ("fable", "mythos") or (line == "opus" and generation >= (5, 5))
    types = set(ALL_THINKING_TYPES)
    if generation < (4, 6):
        types -= {"adaptive", "between_tools"}
    if fifth or generation >= (4, 7):
        types.discard("enabled")  # manual budgets are gone: adaptive thinking and effort
    if always_thinks:
        types -= {"disabled", "between_tools"}
    forced_refused = (generation >= (5, 5) and line in ("opus", "sonnet")) or (
        generation >= (5, 1) and line in ("fable", "mythos")
    )
    takes_effort = generation >= (4, 6) or (line, generation) == ("opus", (4, 5))
    edits = (
        CONTEXT_EDITS
        if generation >= (4, 6)
        else _CLEARING_EDITS
        if generation >= (4, 0)
        else frozenset()
    )
    return ModelRules(
        model=model,
        line=line,
        generation=generation,
        always_thinks=always_thinks,
        thinking_types=frozenset(types),
        effort_levels=_BASIC_EFFORT if takes_effort else frozenset(),
        forced_tool_choice=not forced_refused,
        prefill=not fifth,
        tokenizer_ratio=NEW_TOKENIZER_RATIO if generation >= (4, 7) else 1.0,
        min_cache_tokens=512 if fifth and line in ("opus", "haiku") else 1024,
        context_edits=edits,
    )


def thinking_type(body: Mapping[str, Any]) -> str | None:
    """The request's `thinking.type`, or None when it sends no `thinking`."""
    thinking = body.get("thinking")
    if isinstance(thinking, Mapping) and isinstance(thinking.get("type"), str):
        return str(thinking["type"])
    return None


def thinks(body: Mapping[str, Any], rules: ModelRules) -> bool:
    """Whether the request has the model think (asked for, or a model that always does)."""
    kind = thinking_type(body)
    if kind is None:
        return rules.thinks_by_default
    return kind in ("adaptive", "enabled")


def request_problems(body: Mapping[str, Any], rules: ModelRules) -> list[str]:
    """The model-specific rules `body` breaks, each saying what to change (empty: none)."""
    name = rules.model
    problems = [
        f"{key}: the API takes no sampling parameters (nor does {name}); remove {key}"
        for key in sorted(SAMPLING_PARAMETERS & set(body))
    ]
    problems += _thinking_problems(body, rules)
    choice = body.get("tool_choice")
    forced = choice.get("type") if isinstance(choice, Mapping) else None
    if forced in FORCED_TOOL_CHOICES and not rules.forced_tool_choice:
        problems.append(
            f"tool_choice: {name} refuses a forced tool_choice ({forced!r}); "
            "use {'type': 'auto'} and say in the prompt which tool to call"
        )
    elif forced in FORCED_TOOL_CHOICES and thinks(body, rules):
        problems.append(
            "tool_choice: a forced tool_choice cannot be combined with thinking; "
            "use {'type': 'auto'}"
        )
    problems += _edit_problems(body, rules)
    messages = body.get("messages")
    if (
        not rules.prefill
        and isinstance(messages, list)
        and messages
        and isinstance(messages[-1], Mapping)
        and messages[-1].get("role") == "assistant"
        and not _ends_with_compaction(messages[-1])
    ):
        problems.append(
            f"messages: {name} does not accept an assistant prefill; end the request with a "
            "user message"
        )
    return problems


def _ends_with_compaction(message: Mapping[str, Any]) -> bool:
    # Continuing after a compaction pause sends the summary back as the last (assistant)
    # turn: the model answers from it, nothing is prefilled (docs/context.md, "Server-side
    # context management").
    content = message.get("content")
    last = content[-1] if isinstance(content, list) and content else None
    return isinstance(last, Mapping) and last.get("type") == "compaction"


def _edit_problems(body: Mapping[str, Any], rules: ModelRules) -> list[str]:
    config = body.get("context_management")
    edits = config.get("edits") if isinstance(config, Mapping) else None
    problems: list[str] = []
    for index, edit in enumerate(edits if isinstance(edits, list) else ()):
        kind = edit.get("type") if isinstance(edit, Mapping) else None
        if kind in CONTEXT_EDITS and kind not in rules.context_edits:
            problems.append(
                f"context_management.edits.{index}: {rules.model} does not support {kind}; "
                f"{_EDIT_ADVICE[kind]}"
            )
    return problems


def _thinking_problems(body: Mapping[str, Any], rules: ModelRules) -> list[str]:
    problems: list[str] = []
    name = rules.model
    thinking = body.get("thinking")
    kind = thinking_type(body)
    if thinking is not None and kind is None:
        problems.append("thinking: must be an object with a `type`")
    elif kind is not None and kind not in rules.thinking_types:
        accepted = ", ".join(sorted(rules.thinking_types)) or "none"
        advice = "; it always thinks: send 'adaptive' or no thinking" if rules.always_thinks else ""
        problems.append(
            f"thinking.type: {name} does not accept {kind!r} (it accepts: {accepted}){advice}"
        )
    elif kind == "enabled" and isinstance(thinking, Mapping):
        budget = thinking.get("budget_tokens")
        max_tokens = body.get("max_tokens")
        if not isinstance(budget, int) or budget < 1024:
            problems.append("thinking.budget_tokens: must be an integer >= 1024")
        elif isinstance(max_tokens, int) and budget >= max_tokens:
            problems.append(
                f"thinking.budget_tokens ({budget}) must be below max_tokens ({max_tokens})"
            )
    effort = _effort(body)
    if effort is not None and effort not in rules.effort_levels:
        accepted = ", ".join(level for level in EFFORT_LEVELS if level in rules.effort_levels)
        problems.append(
            f"output_config.effort: {name} does not accept {effort!r} "
            f"(it accepts: {accepted or 'none'})"
        )
    return problems


def _effort(body: Mapping[str, Any]) -> str | None:
    config = body.get("output_config")
    if isinstance(config, Mapping) and isinstance(config.get("effort"), str):
        return str(config["effort"])
    return None


def current_models(models: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Per model line, the newest active model of a Models API listing (by `created_at`)."""
    newest: dict[str, tuple[str, str]] = {}
    for info in models:
        line = info.get("line")
        if info.get("lifecycle") != "active" or not isinstance(line, str):
            continue
        created = str(info.get("created_at") or "")
        model_id = str(info.get("id"))
        if line not in newest or created > newest[line][0]:
            newest[line] = (created, model_id)
    return {line: model_id for line, (_, model_id) in newest.items()}
