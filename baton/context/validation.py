"""A checker for the Messages API's documented request rules.

The same checker guards three places: the hypothesis test over every composed payload, the
local Messages API stand-in (which answers a broken request with the API's 400 shape), and an
optional assertion in model clients. Each problem names its location the way the API does
(`messages.3.content.0: ...`) so a failure reads like the 400 the real API would return.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from baton.context.errors import InvalidRequestError

MAX_CACHE_BREAKPOINTS = 4
# The body fields of `POST /v1/messages` in API version 2026-10-21 (the SDK 2.x default).
REQUEST_FIELDS = frozenset(
    {
        "model", "max_tokens", "messages", "system", "tools", "tool_choice", "metadata",
        "stop_sequences", "stream", "thinking", "cache_control", "container", "diagnostics",
        "inference_geo", "output_config", "service_tier", "speed", "user_profile_id",
        "workspace_id", "context_management",
    }
)  # fmt: skip
# Sampling parameters are refused with a 400 since 2026-10-21, even at their default values.
SAMPLING_PARAMETERS = frozenset({"temperature", "top_p", "top_k"})
THINKING_BLOCK_TYPES = frozenset({"thinking", "redacted_thinking"})
"""Blocks a thinking model returns; sent back unchanged, in assistant messages only."""
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
_TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
_ROLES = ("user", "assistant")
_CACHE_TTLS = ("5m", "1h")


def validate_request(
    body: Any, *, require_model: bool = True, strict_alternation: bool = False
) -> list[str]:
    """Return every rule `body` breaks (empty when valid).

    `strict_alternation` additionally demands user/assistant alternation; the API itself
    merges consecutive same-role turns, but baton's composer never produces them.
    """
    if not isinstance(body, Mapping):
        return ["request body must be a JSON object"]
    problems: list[str] = []
    _check_scalars(body, problems, require_model)
    cache_points = _check_system(body.get("system"), problems)
    cache_points += _check_tools(body.get("tools"), problems)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        problems.append("messages: at least one message is required")
    else:
        cache_points += _check_messages(messages, problems, strict_alternation)
    if cache_points > MAX_CACHE_BREAKPOINTS:
        problems.append(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {cache_points}."
        )
    _check_ttl_order(body, problems)
    return problems


def _check_ttl_order(body: Mapping[str, Any], problems: list[str]) -> None:
    """A 1-hour breakpoint may not follow a 5-minute one in prompt order."""
    five_minutes: str | None = None
    for where, control in _breakpoints_in_order(body):
        if control.get("ttl", "5m") != "1h":
            five_minutes = five_minutes or where
        elif five_minutes is not None:
            problems.append(
                f"{where}.cache_control: a breakpoint with ttl '1h' must come before every "
                f"breakpoint with ttl '5m' (tools, then system, then messages); {five_minutes} "
                "has '5m'"
            )
            return


def _breakpoints_in_order(body: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each block's `cache_control`, in the cache's order: tools → system → messages."""
    for key in ("tools", "system", "messages"):
        items = body.get(key)
        for i, item in enumerate(items if isinstance(items, list) else ()):
            if key != "messages":
                yield from _control_of(item, f"{key}.{i}")
                continue
            content = item.get("content") if isinstance(item, Mapping) else None
            for j, block in enumerate(content if isinstance(content, list) else ()):
                inner = block.get("content") if isinstance(block, Mapping) else None
                for k, nested in enumerate(inner if isinstance(inner, list) else ()):
                    yield from _control_of(nested, f"messages.{i}.content.{j}.content.{k}")
                yield from _control_of(block, f"messages.{i}.content.{j}")


def _control_of(block: Any, where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    control = block.get("cache_control") if isinstance(block, Mapping) else None
    if isinstance(control, Mapping):
        yield where, control


def check_request(
    body: Any, *, require_model: bool = True, strict_alternation: bool = False
) -> None:
    """Raise `InvalidRequestError` listing every broken rule, if any."""
    problems = validate_request(
        body, require_model=require_model, strict_alternation=strict_alternation
    )
    if problems:
        raise InvalidRequestError(problems)


def _check_scalars(body: Mapping[str, Any], problems: list[str], require_model: bool) -> None:
    model = body.get("model")
    if require_model and (not isinstance(model, str) or not model):
        problems.append("model: Field required")
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        problems.append("max_tokens: must be an integer >= 1")
    for key in body:
        if key in SAMPLING_PARAMETERS:
            problems.append(
                f"{key}: Extra inputs are not permitted (removed in API version 2026-10-21)"
            )
        elif key not in REQUEST_FIELDS:
            problems.append(f"{key}: Extra inputs are not permitted")


def _has_cache(block: Any, where: str = "", problems: list[str] | None = None) -> int:
    """1 if `block` is a breakpoint (checking its shape), counting text nested in a result."""
    if not isinstance(block, Mapping):
        return 0
    nested = 0
    if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
        nested = sum(
            _has_cache(inner, f"{where}.content.{k}", problems)
            for k, inner in enumerate(block["content"])
        )
    control = block.get("cache_control")
    if control is None:
        return nested
    if problems is not None and (
        not isinstance(control, Mapping)
        or control.get("type") != "ephemeral"
        or control.get("ttl", "5m") not in _CACHE_TTLS
    ):
        problems.append(
            f"{where}.cache_control: must be {{'type': 'ephemeral'}} with an optional ttl "
            "of '5m' or '1h'"
        )
    return 1 + nested


def _check_text_block(block: Mapping[str, Any], where: str, problems: list[str]) -> None:
    text = block.get("text")
    if not isinstance(text, str):
        problems.append(f"{where}.text: Field required")
    elif not text.strip():
        problems.append(f"{where}: text content blocks must contain non-whitespace text")


def _check_system(system: Any, problems: list[str]) -> int:
    if system is None or isinstance(system, str):
        return 0
    if not isinstance(system, list):
        problems.append("system: must be a string or a list of text blocks")
        return 0
    points = 0
    for i, block in enumerate(system):
        if not isinstance(block, Mapping) or block.get("type") != "text":
            problems.append(f"system.{i}: only text blocks are allowed in system")
            continue
        _check_text_block(block, f"system.{i}", problems)
        points += _has_cache(block, f"system.{i}", problems)
    return points


def _check_tools(tools: Any, problems: list[str]) -> int:
    if tools is None:
        return 0
    if not isinstance(tools, list):
        problems.append("tools: must be a list")
        return 0
    points = 0
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            problems.append(f"tools.{i}: must be an object")
            continue
        name = tool.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            problems.append(
                f"tools.{i}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
            )
        elif name in seen:
            problems.append(f"tools: Tool names must be unique ({name!r} repeats)")
        else:
            seen.add(name)
        schema = tool.get("input_schema")
        if not isinstance(schema, Mapping) or schema.get("type") != "object":
            problems.append(f"tools.{i}.input_schema: must be a JSON schema with type 'object'")
        points += _has_cache(tool, f"tools.{i}", problems)
    return points


def _blocks_of(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _check_messages(messages: Sequence[Any], problems: list[str], strict: bool) -> int:
    points = 0
    seen_ids: set[str] = set()
    pending: set[str] = set()  # tool_use ids of the previous assistant message
    previous_role: str | None = None
    last = len(messages) - 1
    for i, message in enumerate(messages):
        where = f"messages.{i}"
        if not isinstance(message, Mapping):
            problems.append(f"{where}: must be an object")
            continue
        role = message.get("role")
        if role not in _ROLES:
            problems.append(f"{where}.role: Input should be 'user' or 'assistant' (got {role!r})")
            continue
        if i == 0 and role != "user" and not _opens_with_compaction(message):
            # A client may start from the server's summary (docs/context.md, "Server-side
            # context management").
            problems.append(f"{where}: The first message must use the user role")
        if strict and role == previous_role:
            problems.append(f"{where}: roles must alternate between user and assistant")
        content = message.get("content")
        if isinstance(content, str):
            if not content.strip() and not (i == last and role == "assistant"):
                problems.append(f"{where}: all messages must have non-empty content")
            if i == last and role == "assistant" and content != content.rstrip():
                problems.append(
                    f"{where}: final assistant content cannot end with trailing whitespace"
                )
        elif not isinstance(content, list) or (
            not content and not (i == last and role == "assistant")
        ):
            problems.append(f"{where}: all messages must have non-empty content")
        blocks = _blocks_of(content) if not isinstance(content, str) else []
        answered = _check_blocks(
            blocks, where=where, role=role, pending=pending, seen_ids=seen_ids, problems=problems
        )
        points += sum(_has_cache(b, f"{where}.content.{j}", problems) for j, b in enumerate(blocks))
        if role == "user":
            missing = pending - answered
            if missing:
                problems.append(
                    f"{where}: tool_use ids were found without tool_result blocks immediately "
                    f"after: {', '.join(sorted(missing))}. Each tool_use block must have a "
                    "corresponding tool_result block in the next message."
                )
            pending = set()
        else:
            if pending:
                problems.append(
                    f"{where}: tool_use ids were found without tool_result blocks immediately "
                    f"after: {', '.join(sorted(pending))}"
                )
            pending = {
                b["id"] for b in blocks if _is_block(b, "tool_use") and isinstance(b.get("id"), str)
            }
        previous_role = role
    if pending:
        problems.append(
            f"messages.{last}: tool_use ids were found without tool_result blocks immediately "
            f"after: {', '.join(sorted(pending))}"
        )
    return points


def _is_block(block: Any, kind: str) -> bool:
    return isinstance(block, Mapping) and block.get("type") == kind


def _check_blocks(
    blocks: list[Any],
    *,
    where: str,
    role: str,
    pending: set[str],
    seen_ids: set[str],
    problems: list[str],
) -> set[str]:
    """Check one message's blocks; return the tool_use ids its tool_result blocks answer."""
    answered: set[str] = set()
    results_done = False
    for j, block in enumerate(blocks):
        at = f"{where}.content.{j}"
        if not isinstance(block, Mapping):
            problems.append(f"{at}: must be an object")
            continue
        kind = block.get("type")
        if kind == "text":
            _check_text_block(block, at, problems)
            results_done = True
        elif kind == "tool_use":
            if role != "assistant":
                problems.append(f"{at}: tool_use blocks may only appear in assistant messages")
            tool_id = block.get("id")
            if not isinstance(tool_id, str) or not _TOOL_USE_ID.match(tool_id):
                problems.append(f"{at}.id: String should match pattern '^[a-zA-Z0-9_-]+$'")
            elif tool_id in seen_ids:
                problems.append(f"{at}: tool_use ids must be unique (duplicate {tool_id!r})")
            else:
                seen_ids.add(tool_id)
            if not isinstance(block.get("name"), str) or not block.get("name"):
                problems.append(f"{at}.name: Field required")
            if not isinstance(block.get("input"), Mapping):
                problems.append(f"{at}.input: Input should be a valid dictionary")
        elif kind in THINKING_BLOCK_TYPES:
            _check_thinking_block(block, at=at, role=role, problems=problems)
        elif kind == "compaction":
            _check_compaction_block(block, at=at, role=role, problems=problems)
        elif kind == "tool_result":
            _check_tool_result(
                block,
                at=at,
                role=role,
                pending=pending,
                answered=answered,
                results_done=results_done,
                problems=problems,
            )
        else:
            problems.append(f"{at}.type: unsupported content block type {kind!r}")
            results_done = True
    return answered


def _check_thinking_block(
    block: Mapping[str, Any], *, at: str, role: str, problems: list[str]
) -> None:
    if role != "assistant":
        problems.append(f"{at}: {block['type']} blocks may only appear in assistant messages")
    fields = ("thinking", "signature") if block["type"] == "thinking" else ("data",)
    for name in fields:
        if not isinstance(block.get(name), str):
            problems.append(f"{at}.{name}: Field required")
    if block.get("cache_control") is not None:
        problems.append(f"{at}.cache_control: thinking blocks cannot be cached directly")


def _opens_with_compaction(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and bool(content) and _is_block(content[0], "compaction")


def _check_compaction_block(
    block: Mapping[str, Any], *, at: str, role: str, problems: list[str]
) -> None:
    if role != "assistant":
        problems.append(f"{at}: compaction blocks may only appear in assistant messages")
    for name in ("content", "encrypted_content", "signature"):
        if block.get(name) is not None and not isinstance(block[name], str):
            problems.append(f"{at}.{name}: Input should be a valid string")
    if block.get("tool_changes") is not None and not isinstance(block["tool_changes"], list):
        problems.append(f"{at}.tool_changes: Input should be a valid list")


def _check_tool_result(
    block: Mapping[str, Any],
    *,
    at: str,
    role: str,
    pending: set[str],
    answered: set[str],
    results_done: bool,
    problems: list[str],
) -> None:
    if role != "user":
        problems.append(f"{at}: tool_result blocks may only appear in user messages")
        return
    if results_done:
        problems.append(
            f"{at}: tool_result blocks must come first in the content array, before any other block"
        )
    tool_use_id = block.get("tool_use_id")
    if tool_use_id not in pending:
        problems.append(
            f"{at}: unexpected `tool_use_id` found in `tool_result` blocks: {tool_use_id}. "
            "Each `tool_result` block must have a corresponding `tool_use` block in the previous "
            "message."
        )
    elif tool_use_id in answered:
        problems.append(f"{at}: duplicate tool_result for tool_use_id {tool_use_id}")
    else:
        answered.add(tool_use_id)
    content = block.get("content", "")
    if isinstance(content, list):
        for k, inner in enumerate(content):
            if not _is_block(inner, "text"):
                problems.append(f"{at}.content.{k}: only text blocks are supported here")
            else:
                _check_text_block(inner, f"{at}.content.{k}", problems)
    elif not isinstance(content, str):
        problems.append(f"{at}.content: must be a string or a list of text blocks")
