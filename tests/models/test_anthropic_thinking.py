"""AnthropicModel on the current models: thinking blocks kept as received, rules checked
before sending, and a tool loop the stand-in accepts turn after turn."""

from __future__ import annotations

from typing import Any

import pytest

from baton.context.errors import InvalidRequestError
from baton.context.payload import Message, Payload, ToolSpec
from baton.models.protocol import ModelResponse
from baton.testing import MessagesAPIStandIn

READ_TOOL: ToolSpec = {
    "name": "Read",
    "description": "Read a file of the workspace.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}


def first_request(text: str = "Read a.md, then b.md.", max_tokens: int = 2048) -> Payload:
    return {
        "max_tokens": max_tokens,
        "tools": [READ_TOOL],
        "messages": [{"role": "user", "content": text}],
    }


def answered(payload: Payload, reply: ModelResponse) -> Payload:
    """`payload` plus the reply as received and a result for each of its tool calls."""
    results: Message = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": use["id"], "content": "file text"}
            for use in reply.tool_uses
        ],
    }
    assistant: Message = {"role": "assistant", "content": list(reply.content)}
    return {**payload, "messages": [*payload["messages"], assistant, results]}


def kinds(reply: ModelResponse) -> list[str]:
    return [block["type"] for block in reply.content]


@pytest.mark.parametrize("max_tokens", [2048, 30_000])  # a plain call, and a streamed one
async def test_thinking_blocks_come_back_whole_and_in_place(max_tokens: int) -> None:
    """Opus 5.5 always thinks: the reply keeps its thinking and redacted-thinking blocks with
    their signature and data, in order, whether the call streamed or not."""
    async with MessagesAPIStandIn(redacted_thinking_every=1) as api, api.model() as model:
        api.reply({"text": "Reading.", "tool_use": {"name": "Read", "input": {"path": "a.md"}}})
        reply = await model.create(first_request(max_tokens=max_tokens))
        (request,) = api.requests_to("messages")
    assert ["thinking", "redacted_thinking", "text", "tool_use"] == kinds(reply)
    thinking = reply.content[0]
    assert thinking["type"] == "thinking"
    assert ("", True) == (thinking["thinking"], len(thinking["signature"]) > 20)
    assert "Reading." == reply.text  # thinking is not text
    assert (max_tokens > 21_000) == request.stream


async def test_a_tool_loop_sending_the_replies_back_as_received_is_accepted() -> None:
    """Three turns on Opus 5.5 with thinking: each continuation carries the last reply as
    received, and the stand-in (which checks every signature and prefix) accepts all."""
    async with MessagesAPIStandIn(redacted_thinking_every=2) as api, api.model() as model:
        api.reply(
            {"text": "First.", "tool_use": {"name": "Read", "input": {"path": "a.md"}}},
            {"text": "Second.", "tool_use": {"name": "Read", "input": {"path": "b.md"}}},
            "Both read.",
        )
        payload = first_request()
        reply = await model.create(payload)
        for _ in range(2):
            payload = answered(payload, reply)
            reply = await model.create(payload)
        statuses = [r.status for r in api.requests_to("messages")]
    assert [200, 200, 200] == statuses
    assert "Both read." == reply.text


async def test_a_continuation_without_its_thinking_is_refused_by_the_stand_in() -> None:
    """The other side of the rule: dropping the thinking blocks of the last reply is a 400
    (so the test above is not passing vacuously)."""
    async with MessagesAPIStandIn() as api, api.model() as model:
        api.reply({"text": "First.", "tool_use": {"name": "Read", "input": {"path": "a.md"}}})
        payload = first_request()
        reply = await model.create(payload)
        stripped = reply.model_copy(
            update={"content": [b for b in reply.content if b["type"] != "thinking"]}
        )
        with pytest.raises(InvalidRequestError, match="must start with a thinking block"):
            await model.create(answered(payload, stripped))


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ({"tool_choice": {"type": "any"}}, "refuses a forced tool_choice"),
        ({"tool_choice": {"type": "tool", "name": "Read"}}, "refuses a forced tool_choice"),
        ({"thinking": {"type": "disabled"}}, "always thinks"),
        ({"thinking": {"type": "enabled", "budget_tokens": 1024}}, "does not accept 'enabled'"),
        ({"temperature": 0.0}, "no sampling parameters"),
    ],
)
async def test_a_request_the_model_refuses_is_never_sent(
    extra: dict[str, Any], problem: str
) -> None:
    """Forced tool choice, disabled or manual thinking on Opus 5.5, a sampling parameter:
    an InvalidRequestError saying what to change, and no request reaches the API."""
    async with MessagesAPIStandIn() as api, api.model("claude-opus-5-5") as model:
        with pytest.raises(InvalidRequestError, match=problem):
            await model.create({**first_request(), **extra})  # type: ignore[typeddict-item]
        sent = api.requests_to("messages")
    assert [] == sent


async def test_a_prefill_is_refused_on_a_5x_model_and_sent_to_an_older_one() -> None:
    """An assistant prefill is refused before sending on Sonnet 5.5; Opus 4.5 still takes it."""
    prefill: Payload = {
        "max_tokens": 256,
        "messages": [
            {"role": "user", "content": "Answer in JSON."},
            {"role": "assistant", "content": "{"},
        ],
    }
    async with MessagesAPIStandIn() as api:
        async with api.model("claude-sonnet-5-5") as sonnet:
            with pytest.raises(InvalidRequestError, match="assistant prefill"):
                await sonnet.create(prefill)
        async with api.model("claude-opus-4-5") as opus:
            await opus.create(prefill)
        models = [r.body["model"] for r in api.requests_to("messages")]
    assert ["claude-opus-4-5"] == models
