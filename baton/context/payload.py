"""The shape of a Messages API request as `context/` composes it and model clients send it.

These are `TypedDict`s, not models: a payload is handed to the SDK as keyword arguments and
to the stand-in as JSON, so it stays the plain dict the API documents.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict


class CacheControl(TypedDict):
    type: Literal["ephemeral"]
    ttl: NotRequired[Literal["5m", "1h"]]


class TextBlock(TypedDict):
    type: Literal["text"]
    text: str
    cache_control: NotRequired[CacheControl]


class ToolUseBlock(TypedDict):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]
    cache_control: NotRequired[CacheControl]


class ToolResultBlock(TypedDict):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[TextBlock]
    is_error: NotRequired[bool]
    cache_control: NotRequired[CacheControl]


class ThinkingBlock(TypedDict):
    type: Literal["thinking"]
    thinking: str
    signature: str


class RedactedThinkingBlock(TypedDict):
    type: Literal["redacted_thinking"]
    data: str


class CompactionBlock(TypedDict):
    """The server's summary of everything before it (docs/context.md, "Server-side context
    management"); sent back exactly as received, with the edit that made it declared."""

    type: Literal["compaction"]
    content: str | None
    encrypted_content: NotRequired[str | None]
    signature: NotRequired[str | None]
    tool_changes: NotRequired[list[dict[str, Any]] | None]
    cache_control: NotRequired[CacheControl]


ContentBlock = (
    TextBlock
    | ToolUseBlock
    | ToolResultBlock
    | ThinkingBlock
    | RedactedThinkingBlock
    | CompactionBlock
)


class Message(TypedDict):
    role: Literal["user", "assistant"]
    content: str | list[ContentBlock]


class ToolSpec(TypedDict):
    name: str
    description: str
    input_schema: dict[str, Any]
    cache_control: NotRequired[CacheControl]


class Payload(TypedDict):
    """A Messages API request body; `model` is filled in by the model client when absent."""

    max_tokens: int
    messages: list[Message]
    model: NotRequired[str]
    system: NotRequired[str | list[TextBlock]]
    tools: NotRequired[list[ToolSpec]]
    metadata: NotRequired[dict[str, Any]]
    stop_sequences: NotRequired[list[str]]
    thinking: NotRequired[dict[str, Any]]
    output_config: NotRequired[dict[str, Any]]
    tool_choice: NotRequired[dict[str, Any]]
    context_management: NotRequired[dict[str, Any]]
    betas: NotRequired[list[str]]


EPHEMERAL: CacheControl = {"type": "ephemeral"}
