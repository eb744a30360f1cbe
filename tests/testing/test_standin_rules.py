"""The stand-in refuses what a model does not accept: each rule of `models/rules.py`, by model."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from anthropic import AsyncAnthropic

from baton.models.rules import EFFORT_LEVELS
from baton.testing import DEFAULT_MODELS, MessagesAPIStandIn

TOOLS: list[Any] = [{"name": "Read", "input_schema": {"type": "object"}}]
HELLO: list[Any] = [{"role": "user", "content": "Read a.md"}]
FORCED: Any = {"type": "tool", "name": "Read"}


def sdk(api: MessagesAPIStandIn) -> AsyncAnthropic:
    return AsyncAnthropic(api_key=api.api_key, base_url=api.base_url, max_retries=0)


async def outcome(
    client: AsyncAnthropic, model: str, messages: list[Any] = HELLO, **options: Any
) -> str:
    """`ok`, or the message of the 400 the request got."""
    try:
        await client.messages.create(
            model=model, max_tokens=4096, messages=messages, tools=TOOLS, **options
        )
    except anthropic.BadRequestError as exc:
        return exc.api_message
    return "ok"


async def test_a_forced_tool_choice_is_refused_on_opus_and_sonnet_5_5() -> None:
    """tool_choice any/tool: a 400 on Opus 5.5 and Sonnet 5.5, accepted on Haiku 5.5."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        results = [
            await outcome(client, model, tool_choice=choice)
            for model in ("claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5")
            for choice in (FORCED, {"type": "any"})
        ]
        (refused, *_) = api.requests_to("messages")
    assert [
        "tool_choice: claude-opus-5-5 refuses a forced tool_choice ('tool'); use {'type': "
        "'auto'} and say in the prompt which tool to call",
        "tool_choice: claude-opus-5-5 refuses a forced tool_choice ('any'); use {'type': "
        "'auto'} and say in the prompt which tool to call",
        "tool_choice: claude-sonnet-5-5 refuses a forced tool_choice ('tool'); use {'type': "
        "'auto'} and say in the prompt which tool to call",
        "tool_choice: claude-sonnet-5-5 refuses a forced tool_choice ('any'); use {'type': "
        "'auto'} and say in the prompt which tool to call",
        "ok",
        "ok",
    ] == results
    assert (400, (results[0],)) == (refused.status, refused.problems)


async def test_sampling_parameters_are_refused() -> None:
    """temperature, top_p and top_k are a 400 naming the parameter."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        results = [
            await outcome(client, "claude-sonnet-5-5", extra_body={name: value})
            for name, value in (("temperature", 0.2), ("top_p", 0.9), ("top_k", 5))
        ]
    assert [
        f"{name}: Extra inputs are not permitted (removed in API version 2026-10-21)"
        for name in ("temperature", "top_p", "top_k")
    ] == results


async def test_an_assistant_prefill_is_refused_on_5x_only() -> None:
    """Ending with an assistant message is a 400 on the 5.x models, a prefill on Haiku 4.5."""
    prefilled: list[Any] = [*HELLO, {"role": "assistant", "content": "Sure, reading"}]
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        results = [
            await outcome(client, model, prefilled)
            for model in ("claude-opus-5", "claude-haiku-4-5")
        ]
    assert [
        "messages: claude-opus-5 does not accept an assistant prefill; end the request with a "
        "user message",
        "ok",
    ] == results


async def test_a_manual_thinking_budget_is_refused_on_5x() -> None:
    """thinking enabled with budget_tokens: a 400 on Opus 5, thinking on Haiku 4.5."""
    enabled: Any = {"type": "enabled", "budget_tokens": 2048}
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        refused = await outcome(client, "claude-opus-5", thinking=enabled)
        accepted = await client.messages.create(
            model="claude-haiku-4-5", max_tokens=4096, messages=HELLO, thinking=enabled
        )
    assert refused.startswith("thinking.type: claude-opus-5 does not accept 'enabled'")
    assert ["thinking", "text"] == [block.type for block in accepted.content]


async def test_a_budget_at_or_above_max_tokens_is_refused() -> None:
    """budget_tokens must stay below max_tokens where manual budgets exist."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        refused = await outcome(
            client, "claude-haiku-4-5", thinking={"type": "enabled", "budget_tokens": 4096}
        )
    assert "thinking.budget_tokens (4096) must be below max_tokens (4096)" == refused


async def test_disabled_thinking_is_refused_on_opus_5_5_only() -> None:
    """thinking disabled: a 400 on Opus 5.5 (it always thinks); no thinking on Sonnet 5.5."""
    disabled: Any = {"type": "disabled"}
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        refused = await outcome(client, "claude-opus-5-5", thinking=disabled)
        plain = await client.messages.create(
            model="claude-sonnet-5-5", max_tokens=100, messages=HELLO, thinking=disabled
        )
    assert refused.startswith("thinking.type: claude-opus-5-5 does not accept 'disabled'")
    assert ["text"] == [block.type for block in plain.content]


async def test_the_rules_follow_the_capabilities_in_the_model_table() -> None:
    """An effort level the row's capabilities mark unsupported is refused, by that row."""
    row = DEFAULT_MODELS["claude-haiku-5-5"]
    capabilities = {**row.capabilities, "effort": {**row.capabilities["effort"], "max": {}}}
    narrowed = row.model_copy(update={"capabilities": capabilities})
    async with MessagesAPIStandIn(models={row.id: narrowed}) as api, sdk(api) as client:
        refused = await outcome(client, row.id, output_config={"effort": "max"})
        accepted = await outcome(client, row.id, output_config={"effort": "high"})
    levels = ", ".join(level for level in EFFORT_LEVELS if level in narrowed.rules.effort_levels)
    assert "max" in row.rules.effort_levels
    assert (
        f"output_config.effort: claude-haiku-5-5 does not accept 'max' (it accepts: {levels})",
        "ok",
    ) == (refused, accepted)


async def test_count_tokens_applies_the_model_rules_and_checks_signatures() -> None:
    """count_tokens refuses what messages refuses: a prefill on 5.x, a forged thinking block."""
    forged: list[Any] = [
        *HELLO,
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "", "signature": "x"}]},
        {"role": "user", "content": "Go on"},
    ]
    prefilled: list[Any] = [*HELLO, {"role": "assistant", "content": "Sure"}]
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        messages = []
        for body in (prefilled, forged):
            with pytest.raises(anthropic.BadRequestError) as caught:
                await client.messages.count_tokens(model="claude-sonnet-5-5", messages=body)
            messages.append(caught.value.api_message)
    assert [
        "messages: claude-sonnet-5-5 does not accept an assistant prefill; end the request "
        "with a user message",
        "messages.1.content.0: Invalid `signature` in `thinking` block.",
    ] == messages
