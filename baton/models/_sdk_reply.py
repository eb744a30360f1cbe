"""The SDK's reply as baton's `ModelResponse`: blocks, stop reason, usage, context edits.

Text and tool calls are copied; thinking, redacted thinking and `compaction` blocks are kept
exactly as received, so they can go back unchanged. The usage adds the 1-hour part of the
cache writes and the server-side compaction the call ran: the `compaction` entries of
`usage.iterations`, which the top-level counts leave out (docs/context.md, "Server-side
context management").
"""

from __future__ import annotations

from typing import Any

from anthropic.types import Message
from anthropic.types.beta import BetaMessage

from baton._log import get_logger
from baton.context.usage import Usage
from baton.models.protocol import ModelResponse

log = get_logger(__name__)


def to_response(message: Message | BetaMessage, latency_ms: float) -> ModelResponse:
    """`message` as a `ModelResponse`; a block of another kind is dropped, with a warning."""
    content: list[dict[str, Any]] = []
    for block in message.content:
        if block.type == "text":
            # An empty text block cannot be sent back in a later request, so it is dropped.
            if block.text.strip():
                content.append({"type": "text", "text": block.text})
        elif block.type == "tool_use":
            content.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
            )
        elif block.type == "thinking":
            # Kept whole, empty text included: the tool loop must send it back unchanged.
            content.append(
                {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
            )
        elif block.type == "redacted_thinking":
            content.append({"type": "redacted_thinking", "data": block.data})
        elif block.type == "compaction":
            # Every field as it came (signature, encrypted content, tool changes): the block
            # goes back unchanged.
            content.append(block.to_dict(mode="json"))
        else:
            log.warning("model.block_dropped", model=message.model, block_type=block.type)
    managed = getattr(message, "context_management", None)
    return ModelResponse(
        content=content,
        stop_reason=message.stop_reason,
        usage=_usage(message),
        model=message.model,
        latency_ms=latency_ms,
        context_management=managed.to_dict(mode="json") if managed is not None else None,
    )


def _usage(message: Message | BetaMessage) -> Usage:
    """The call's usage, with the 1-hour part of its cache writes and the server-side
    compaction it ran (the `compaction` entries of `usage.iterations`, billed on top)."""
    usage = message.usage
    split = usage.cache_creation
    compactions = [
        entry for entry in getattr(usage, "iterations", None) or () if entry.type == "compaction"
    ]
    return Usage(
        input_tokens=usage.input_tokens,
        cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
        cache_read_input_tokens=usage.cache_read_input_tokens or 0,
        output_tokens=usage.output_tokens,
        cache_creation_1h_input_tokens=split.ephemeral_1h_input_tokens if split else 0,
        compaction_input_tokens=sum(e.input_tokens for e in compactions),
        compaction_cache_creation_input_tokens=sum(
            e.cache_creation_input_tokens for e in compactions
        ),
        compaction_cache_read_input_tokens=sum(e.cache_read_input_tokens for e in compactions),
        compaction_output_tokens=sum(e.output_tokens for e in compactions),
    )
