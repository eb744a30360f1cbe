"""AnthropicModel with server-side context management: the real SDK's beta Messages API
against the stand-in (betas as a header, compaction blocks kept verbatim, the usage of the
compaction and of 1-hour cache writes, count_tokens through the beta endpoint)."""

from __future__ import annotations

from typing import Any

import pytest

from baton.context.errors import InvalidRequestError
from baton.context.payload import Payload
from baton.context.server_edits import (
    CLEAR_TOOL_USES_EDIT,
    COMPACT_BETA,
    COMPACT_EDIT,
    CONTEXT_MANAGEMENT_BETA,
)
from baton.testing import MessagesAPIStandIn
from tests.testing.test_standin_context import history

BETAS = [COMPACT_BETA, CONTEXT_MANAGEMENT_BETA]
COMPACT: dict[str, Any] = {
    "edits": [
        {
            "type": COMPACT_EDIT,
            "trigger": {"type": "input_tokens", "value": 50_000},
            "pause_after_compaction": True,
        }
    ]
}


def managed(messages: list[Any], max_tokens: int = 1024, **extra: Any) -> Payload:
    payload: Any = {
        "max_tokens": max_tokens,
        "messages": messages,
        "tools": [
            {"name": "Read", "description": "Read a part.", "input_schema": {"type": "object"}}
        ],
        "betas": BETAS,
        "context_management": COMPACT,
        **extra,
    }
    return payload


@pytest.mark.parametrize("max_tokens", [1024, 30_000])
async def test_a_compaction_pause_comes_back_verbatim_and_goes_back_unchanged(
    max_tokens: int,
) -> None:
    """Plain or streamed, the beta call sends the betas as the `anthropic-beta` header (never
    in the body), keeps every field of the compaction block and the compaction's usage, and
    the block sent back is accepted (the stand-in checks its signature)."""
    async with MessagesAPIStandIn() as api, api.model("claude-haiku-5-5") as model:
        api.reply("Going on from the summary.")
        messages = history(60)
        paused = await model.create(managed(messages, max_tokens))
        block = paused.compaction
        assert block is not None
        resumed = await model.create(
            managed([*messages, {"role": "assistant", "content": paused.content}], max_tokens)
        )
        first, _ = api.requests_to("messages")
    assert {"type", "content", "encrypted_content", "signature"} == set(block)
    assert [block] == paused.content
    assert ("compaction", "Going on from the summary.") == (paused.stop_reason, resumed.text)
    assert (",".join(BETAS), "/v1/messages") == (first.headers["anthropic-beta"], first.path)
    assert "betas" not in first.body
    assert COMPACT == first.body["context_management"]
    usage = paused.usage
    assert (0, 0) == (usage.input_tokens, usage.output_tokens)
    assert 50_000 < usage.compaction_input_tokens
    assert 0 < usage.compaction_output_tokens
    assert {"applied_edits": []} == paused.context_management


async def test_applied_edits_are_read_as_plain_dicts() -> None:
    """A clearing the server applied reaches the response as the API's plain dicts."""
    edit = {"type": CLEAR_TOOL_USES_EDIT, "trigger": {"type": "input_tokens", "value": 5000}}
    async with MessagesAPIStandIn() as api, api.model("claude-haiku-5-5") as model:
        reply = await model.create(managed(history(20), context_management={"edits": [edit]}))
    assert reply.context_management is not None
    ((applied),) = reply.context_management["applied_edits"]
    assert (CLEAR_TOOL_USES_EDIT, 17) == (applied["type"], applied["cleared_tool_uses"])
    assert isinstance(applied, dict)


async def test_one_hour_cache_writes_are_read_on_a_plain_call() -> None:
    """A breakpoint with `ttl: 1h` on a call without betas: the write is reported as an
    hour's in `cache_creation_1h_input_tokens`."""
    system = [
        {
            "type": "text",
            "text": "Follow the design. " * 400,
            "cache_control": {"type": "ephemeral", "ttl": "1h"},
        }
    ]
    payload: Any = {
        "max_tokens": 64,
        "system": system,
        "messages": [{"role": "user", "content": "go"}],
    }
    async with MessagesAPIStandIn() as api, api.model("claude-haiku-5-5") as model:
        reply = await model.create(payload)
        (sent,) = api.requests_to("messages")
    assert 0 < reply.usage.cache_creation_input_tokens
    assert reply.usage.cache_creation_input_tokens == reply.usage.cache_creation_1h_input_tokens
    assert "anthropic-beta" not in sent.headers


async def test_count_tokens_goes_through_the_beta_endpoint_with_the_edits() -> None:
    """count_tokens of a payload with edits sends its betas and context management, and the
    count is what the clearing leaves."""
    edit = {"type": CLEAR_TOOL_USES_EDIT, "trigger": {"type": "input_tokens", "value": 5000}}
    payload = managed(history(20), context_management={"edits": [edit]})
    async with MessagesAPIStandIn() as api, api.model("claude-haiku-5-5") as model:
        cleared = await model.count_tokens(payload)
        whole = await model.count_tokens({"max_tokens": 1, "messages": payload["messages"]})
        managed_count, plain = api.requests_to("count_tokens")
    assert cleared < whole
    assert {"context_management": payload["context_management"]} == {
        k: v for k, v in managed_count.body.items() if k == "context_management"
    }
    assert ",".join(BETAS) in managed_count.headers["anthropic-beta"]
    assert "context_management" not in plain.body


async def test_an_edit_the_request_cannot_make_is_refused_before_sending() -> None:
    """An edit without its beta, and the compact edit on a model that lacks it, are
    InvalidRequestErrors naming what to change; nothing is sent."""
    async with MessagesAPIStandIn() as api:
        async with api.model("claude-haiku-5-5") as model:
            with pytest.raises(InvalidRequestError, match="requires the beta 'compact-2026-01-12'"):
                await model.create(managed(history(1), betas=[CONTEXT_MANAGEMENT_BETA]))
        async with api.model("claude-haiku-4-5") as model:
            with pytest.raises(
                InvalidRequestError,
                match="claude-haiku-4-5 does not support compact_20260112; set strategy",
            ):
                await model.create(managed(history(1)))
        assert [] == api.requests_to("messages")


async def test_a_thinking_tool_loop_goes_on_after_a_compaction_pause() -> None:
    """On Opus 5.5 (it always thinks): pause, send the block back, get a thinking tool call,
    answer it: every request is accepted, the tool loop's thinking checked from the block."""
    async with MessagesAPIStandIn() as api, api.model("claude-opus-5-5") as model:
        api.reply({"tool_use": {"name": "Read", "input": {}}}, "done")
        messages = history(60)
        paused = await model.create(managed(messages))
        messages.append({"role": "assistant", "content": paused.content})
        called = await model.create(managed(messages))
        (use,) = called.tool_uses
        result = {"type": "tool_result", "tool_use_id": use["id"], "content": "part"}
        messages += [
            {"role": "assistant", "content": called.content},
            {"role": "user", "content": [result]},
        ]
        done = await model.create(managed(messages))
        statuses = [r.status for r in api.requests_to("messages")]
    assert ["thinking", "tool_use"] == [b["type"] for b in called.content]
    assert ("done", [200, 200, 200]) == (done.text, statuses)
