"""The checks the Messages API makes of a request's `context_management`, as 400 messages.

`baton.context.server_edits.edit_problems` is the public entry: each problem names its place
the way the API does (`context_management.edits.0.trigger.value: ...`), so the stand-in's 400,
the offline model's `InvalidRequestError` and a model client's check before sending all read
like the API's answer (docs/context.md, "Server-side context management").
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

COMPACT_EDIT: Final = "compact_20260112"
CLEAR_TOOL_USES_EDIT: Final = "clear_tool_uses_20250919"
CLEAR_THINKING_EDIT: Final = "clear_thinking_20251015"
COMPACT_BETA: Final = "compact-2026-01-12"
CONTEXT_MANAGEMENT_BETA: Final = "context-management-2025-06-27"
BETA_FOR_EDIT: Mapping[str, str] = MappingProxyType(
    {
        CLEAR_THINKING_EDIT: CONTEXT_MANAGEMENT_BETA,
        CLEAR_TOOL_USES_EDIT: CONTEXT_MANAGEMENT_BETA,
        COMPACT_EDIT: COMPACT_BETA,
    }
)
"""The beta (`anthropic-beta` header) each edit type needs."""
MIN_COMPACT_TRIGGER: Final = 50_000

_FIELDS: Mapping[str, frozenset[str]] = {
    CLEAR_THINKING_EDIT: frozenset({"type", "keep"}),
    CLEAR_TOOL_USES_EDIT: frozenset(
        {"type", "trigger", "keep", "clear_at_least", "exclude_tools", "clear_tool_inputs"}
    ),
    COMPACT_EDIT: frozenset({"type", "trigger", "instructions", "pause_after_compaction"}),
}
_TAGS = ", ".join(repr(kind) for kind in sorted(_FIELDS))
_Check = Callable[[Any, str], list[str]]


def check_edits(
    body: Mapping[str, Any], betas: Collection[str], thinking_on: bool
) -> tuple[list[str], list[str]]:
    """The problems of `body["context_management"]` and the edit types it declares."""
    config = body.get("context_management")
    if config is None:
        return [], []
    if not isinstance(config, Mapping):
        return ["context_management: Input should be a valid dictionary"], []
    problems = [
        f"context_management.{key}: Extra inputs are not permitted"
        for key in sorted(set(config) - {"edits"})
    ]
    edits = config.get("edits", [])
    if not isinstance(edits, list):
        return [*problems, "context_management.edits: Input should be a valid list"], []
    declared: list[str] = []
    for index, edit in enumerate(edits):
        at = f"context_management.edits.{index}"
        if not isinstance(edit, Mapping):
            problems.append(f"{at}: Input should be a valid dictionary")
            continue
        kind = edit.get("type")
        if kind not in _FIELDS:
            problems.append(
                f"{at}: Input tag {kind!r} found using 'type' does not match any of the "
                f"expected tags: {_TAGS}"
            )
            continue
        problems += _edit_problems(
            str(kind),
            edit,
            at=at,
            index=index,
            betas=betas,
            declared=declared,
            thinking=thinking_on,
        )
        declared.append(str(kind))
    return problems, declared


def _edit_problems(
    kind: str,
    edit: Mapping[str, Any],
    *,
    at: str,
    index: int,
    betas: Collection[str],
    declared: Sequence[str],
    thinking: bool,
) -> list[str]:
    problems = [
        f"{at}.{key}: Extra inputs are not permitted" for key in sorted(set(edit) - _FIELDS[kind])
    ]
    beta = BETA_FOR_EDIT[kind]
    if beta not in betas:
        problems.append(
            f"{at}.type: {kind!r} requires the beta {beta!r}; send it in the `anthropic-beta` "
            "header"
        )
    if kind in declared:
        problems.append(f"context_management.edits: at most one {kind!r} edit may be given")
    if kind == CLEAR_THINKING_EDIT:
        if index != 0:
            problems.append(
                f"{at}: {CLEAR_THINKING_EDIT!r} must come first in context_management.edits "
                "when combined with other edits"
            )
        if not thinking:
            problems.append(f"{at}: {CLEAR_THINKING_EDIT!r} requires thinking to be enabled")
    for field, check in _FIELD_CHECKS[kind].items():
        if field in edit:
            problems += check(edit[field], f"{at}.{field}")
    return problems


def _counter(kinds: tuple[str, ...], minimum: int, *, nullable: bool) -> _Check:
    """A check of `{"type": <one of kinds>, "value": <integer >= minimum>}`."""
    shape = " or ".join(f"{{'type': '{kind}', 'value': <integer>}}" for kind in kinds)

    def check(value: Any, at: str) -> list[str]:
        if value is None and nullable:
            return []
        if not isinstance(value, Mapping) or set(value) != {"type", "value"}:
            return [f"{at}: must be {shape}"]
        if value["type"] not in kinds:
            expected = ", ".join(repr(kind) for kind in kinds)
            return [f"{at}.type: Input should be {expected}"]
        number = value["value"]
        if not isinstance(number, int) or isinstance(number, bool):
            return [f"{at}.value: Input should be a valid integer"]
        if number < minimum:
            return [f"{at}.value: Input should be greater than or equal to {minimum}"]
        return []

    return check


def _boolean(value: Any, at: str) -> list[str]:
    return [] if isinstance(value, bool) else [f"{at}: Input should be a valid boolean"]


def _text(value: Any, at: str) -> list[str]:
    return [] if value is None or isinstance(value, str) else [f"{at}: Input should be a string"]


def _names(value: Any, at: str) -> list[str]:
    if value is None or (isinstance(value, list) and all(isinstance(n, str) for n in value)):
        return []
    return [f"{at}: Input should be a list of tool names"]


def _tool_inputs(value: Any, at: str) -> list[str]:
    if isinstance(value, bool):
        return []
    return [] if not _names(value, at) else [f"{at}: Input should be a boolean or tool names"]


def _thinking_keep(value: Any, at: str) -> list[str]:
    if value in ("all", {"type": "all"}):
        return []
    if not _counter(("thinking_turns",), 1, nullable=False)(value, at):
        return []
    return [f"{at}: must be 'all' or {{'type': 'thinking_turns', 'value': <integer >= 1>}}"]


_FIELD_CHECKS: Mapping[str, Mapping[str, _Check]] = {
    CLEAR_THINKING_EDIT: {"keep": _thinking_keep},
    CLEAR_TOOL_USES_EDIT: {
        "trigger": _counter(("input_tokens", "tool_uses"), 1, nullable=False),
        "keep": _counter(("tool_uses",), 0, nullable=False),
        "clear_at_least": _counter(("input_tokens",), 0, nullable=True),
        "exclude_tools": _names,
        "clear_tool_inputs": _tool_inputs,
    },
    COMPACT_EDIT: {
        "trigger": _counter(("input_tokens",), MIN_COMPACT_TRIGGER, nullable=True),
        "instructions": _text,
        "pause_after_compaction": _boolean,
    },
}


def compaction_without_edit(messages: Any) -> str | None:
    """The place of the first compaction block in `messages`, if any (a request carrying
    one must declare the compact edit)."""
    for i, message in enumerate(messages if isinstance(messages, list) else ()):
        content = message.get("content") if isinstance(message, Mapping) else None
        for j, block in enumerate(content if isinstance(content, list) else ()):
            if isinstance(block, Mapping) and block.get("type") == "compaction":
                return f"messages.{i}.content.{j}"
    return None
