"""The context engine: conversations, token accounting, strategies, handoff packages."""

from baton.context.payload import (
    CacheControl,
    ContentBlock,
    Message,
    Payload,
    TextBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)
from baton.context.tokens import estimate_payload_tokens, estimate_text_tokens
from baton.context.usage import Usage
from baton.context.validation import check_request, validate_request

__all__ = [
    "CacheControl",
    "ContentBlock",
    "Message",
    "Payload",
    "TextBlock",
    "ToolResultBlock",
    "ToolSpec",
    "ToolUseBlock",
    "Usage",
    "check_request",
    "estimate_payload_tokens",
    "estimate_text_tokens",
    "validate_request",
]
