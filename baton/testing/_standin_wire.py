"""What the Messages API stand-in puts on the wire: message bodies, errors and SSE events.

Shapes follow the API reference (and what the `anthropic` SDK parses): errors are
`{"type": "error", "error": {"type", "message"}, "request_id"}`; a stream is `message_start`,
`ping`, per block `content_block_start` / `content_block_delta`… / `content_block_stop`, then
`message_delta` (stop reason, final output tokens) and `message_stop`, every event named on
its `event:` line (the SDK skips unnamed ones); an error inside a stream is an `error` event.
A thinking block streams as an empty `thinking` block, its text in `thinking_delta`s, then
one `signature_delta`; a `redacted_thinking` block arrives whole in its `content_block_start`;
a `compaction` block opens without its `content` and `encrypted_content` and gets both in one
`compaction_delta` (the SDK's beta stream replaces them, it does not append). The response's
`context_management` and the `usage.iterations` come with `message_delta`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from baton.context.prompt_cache import CacheUsage

ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    409: "conflict_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_ERROR_MESSAGES: dict[str, str] = {
    "invalid_request_error": "Invalid request",
    "authentication_error": "invalid x-api-key",
    "billing_error": "Billing error",
    "permission_error": "Your API key does not have permission to use the specified resource.",
    "not_found_error": "Not found",
    "timeout_error": "Request timeout",
    "conflict_error": "Conflict",
    "request_too_large": "Request exceeds the maximum allowed number of bytes.",
    "rate_limit_error": "Number of request tokens has exceeded your per-minute rate limit",
    "api_error": "Internal server error",
    "overloaded_error": "Overloaded",
}


def error_type_for(status: int) -> str:
    """The API's error type for an HTTP status (`api_error` for any other 5xx)."""
    return ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


def error_body(error_type: str, message: str | None, request_id: str) -> dict[str, Any]:
    """The API's error object."""
    return {
        "type": "error",
        "error": {"type": error_type, "message": message or _ERROR_MESSAGES.get(error_type, "")},
        "request_id": request_id,
    }


def usage_body(
    cache: CacheUsage, output_tokens: int, thinking_tokens: int | None = None
) -> dict[str, Any]:
    """A `usage` object with all four counts and the cache-write split by TTL.

    `thinking_tokens`, for a reply that thought, adds `output_tokens_details`."""
    usage: dict[str, Any] = {
        "input_tokens": cache.input_tokens,
        "cache_creation_input_tokens": cache.cache_creation_input_tokens,
        "cache_read_input_tokens": cache.cache_read_input_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": cache.cache_creation_5m_input_tokens,
            "ephemeral_1h_input_tokens": cache.cache_creation_1h_input_tokens,
        },
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }
    if thinking_tokens is not None:
        usage["output_tokens_details"] = {"thinking_tokens": thinking_tokens}
    return usage


def message_body(
    *,
    message_id: str,
    model: str,
    content: list[dict[str, Any]],
    stop_reason: str,
    usage: dict[str, Any],
    context_management: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A complete `Message` object, as a non-streaming call returns it (with the server's
    `context_management` report when the request asked for edits)."""
    managed = {} if context_management is None else {"context_management": context_management}
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
        **managed,
    }


def sse(event: str, data: Mapping[str, Any]) -> bytes:
    """One server-sent event: a named `event:` line and its JSON `data:` line."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _opening_and_deltas(
    block: Mapping[str, Any], chunk_chars: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    kind = block["type"]
    if kind == "text":
        parts = _chunks(block["text"], chunk_chars)
        return {"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in parts]
    if kind == "thinking":
        # Hidden thinking (display "omitted") sends no thinking_delta, only its signature.
        parts = _chunks(block["thinking"], chunk_chars) if block["thinking"] else []
        deltas = [{"type": "thinking_delta", "thinking": p} for p in parts]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
        return {"type": "thinking", "thinking": "", "signature": ""}, deltas
    if kind == "redacted_thinking":
        return dict(block), []
    if kind == "compaction":
        sealed = ("content", "encrypted_content")
        delta = {"type": "compaction_delta", **{k: block.get(k) for k in sealed}}
        return {**block, **dict.fromkeys(sealed)}, [delta]
    opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
    raw = json.dumps(block["input"], ensure_ascii=False)
    # The API opens every tool input with an empty partial_json delta.
    deltas = [{"type": "input_json_delta", "partial_json": ""}] + [
        {"type": "input_json_delta", "partial_json": part} for part in _chunks(raw, chunk_chars)
    ]
    return opening, deltas


def _block_events(index: int, block: Mapping[str, Any], chunk_chars: int) -> list[bytes]:
    opening, deltas = _opening_and_deltas(block, chunk_chars)
    events = [
        sse(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": opening},
        )
    ]
    events += [
        sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
        for d in deltas
    ]
    events.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def stream_events(
    message: Mapping[str, Any],
    *,
    chunk_chars: int = 24,
    error: Mapping[str, Any] | None = None,
) -> Iterator[bytes]:
    """The SSE events of `message`; with `error`, the stream breaks off with that error event."""
    usage = message["usage"]
    # message_delta carries the final counts; the thinking share is only known by then.
    late = ("output_tokens", "output_tokens_details", "iterations")
    final_usage = {k: usage[k] for k in late if k in usage}
    opening = {
        **message,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            **{k: v for k, v in usage.items() if k not in late},
            "output_tokens": 1,
        },
    }
    managed = opening.pop("context_management", None)
    yield sse("message_start", {"type": "message_start", "message": opening})
    yield sse("ping", {"type": "ping"})
    for index, block in enumerate(message["content"]):
        events = _block_events(index, block, chunk_chars)
        if error is not None:
            # Break off inside the first block, as a real overload mid-generation does.
            yield from events[:2]
            yield sse("error", error)
            return
        yield from events
    yield sse(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": final_usage,
            **({} if managed is None else {"context_management": managed}),
        },
    )
    yield sse("message_stop", {"type": "message_stop"})
