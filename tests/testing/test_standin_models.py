"""The stand-in's Models API and model table: lifecycle, lines, capabilities, tokenizer."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
import pytest
from anthropic import AsyncAnthropic

from baton.context.tokens import estimate_payload_tokens
from baton.models.rules import current_models, rules_for
from baton.testing import DEFAULT_MODELS, MessagesAPIStandIn, StandInModel

HELLO: list[Any] = [{"role": "user", "content": "Hello there, how are you today?"}]


def sdk(api: MessagesAPIStandIn) -> AsyncAnthropic:
    return AsyncAnthropic(api_key=api.api_key, base_url=api.base_url, max_retries=0)


def scaled(tokens: int) -> int:
    """Tokens at the 5.x tokenizer's 1.3 per estimated token, rounded up (in integers)."""
    return -(-tokens * 13 // 10)


async def test_the_list_pages_through_every_model_newest_first() -> None:
    """GET /v1/models lists the whole table newest first; the SDK pages through it by last_id."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        whole = [info async for info in client.models.list()]
        paged = [info.id async for info in client.models.list(limit=5)]
    newest_first = sorted(
        DEFAULT_MODELS.values(), key=lambda card: (card.created_at, card.id), reverse=True
    )
    assert [card.id for card in newest_first] == [info.id for info in whole]
    assert [info.id for info in whole] == paged
    assert 1 + 3 == len(api.requests_to("models"))


async def test_the_newest_active_model_of_each_line_is_the_5_5_generation() -> None:
    """Per line, the newest active model is Opus/Sonnet/Haiku 5.5 and Fable 5.1."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        listed = [info.model_dump(mode="json") async for info in client.models.list()]
    assert {
        "opus": "claude-opus-5-5",
        "sonnet": "claude-sonnet-5-5",
        "haiku": "claude-haiku-5-5",
        "fable": "claude-fable-5-1",
    } == current_models(listed)


async def test_each_lifecycle_stage_reports_its_limits_and_dates() -> None:
    """Current, legacy, deprecated and retired models answer with their limits and dates."""
    ids = [
        "claude-opus-5-5",
        "claude-sonnet-5",
        "claude-haiku-4-5",
        "claude-opus-4-5",
        "claude-opus-4-0",
    ]
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        infos = [await client.models.retrieve(model_id) for model_id in ids]
    assert [
        ("active", "opus", 1_000_000, 128_000, None, None),
        ("active", "sonnet", 1_000_000, 128_000, None, None),
        ("active", "haiku", 200_000, 64_000, None, None),
        ("deprecated", "opus", 200_000, 64_000, "2026-10-22", "2027-01-22"),
        ("retired", "opus", 200_000, 32_000, "2026-03-16", "2026-06-15"),
    ] == [
        (
            info.lifecycle,
            info.line,
            info.max_input_tokens,
            info.max_tokens,
            info.deprecated_at.date().isoformat() if info.deprecated_at else None,
            info.retires_at.date().isoformat() if info.retires_at else None,
        )
        for info in infos
    ]
    assert infos[1].created_at < infos[0].created_at


async def test_capabilities_say_which_thinking_types_and_efforts_a_model_takes() -> None:
    """Thinking types come from the model rules; reading them back gives the same rules."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        infos = {info.id: info async for info in client.models.list()}
    types = {
        model_id: sorted(
            name
            for name, support in info.capabilities.thinking.types.model_dump().items()
            if support["supported"]
        )
        for model_id, info in infos.items()
        if info.capabilities is not None
    }
    assert ["adaptive"] == types["claude-opus-5-5"]
    assert ["adaptive", "between_tools", "disabled"] == types["claude-sonnet-5-5"]
    assert ["disabled", "enabled"] == types["claude-haiku-4-5"]
    assert {model_id: rules_for(model_id) for model_id in DEFAULT_MODELS} == {
        model_id: rules_for(model_id).with_capabilities(info.capabilities.model_dump())
        for model_id, info in infos.items()
        if info.capabilities is not None
    }


async def test_a_retired_model_is_not_found_on_messages_and_count_tokens() -> None:
    """Messages and count_tokens naming a retired model get a 404 saying it is retired."""
    body = {"model": "claude-opus-4-0", "max_tokens": 10, "messages": HELLO}
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        with pytest.raises(anthropic.NotFoundError) as created:
            await client.messages.create(model="claude-opus-4-1", max_tokens=10, messages=HELLO)
        with pytest.raises(anthropic.NotFoundError) as counted:
            await client.messages.count_tokens(model="claude-opus-4-1", messages=HELLO)
        info = await client.models.retrieve("claude-opus-4-1")
        async with httpx2.AsyncClient() as http:
            raw = await http.post(
                f"{api.base_url}/v1/messages",
                json=body,
                headers={"x-api-key": api.api_key or "", "anthropic-version": "2023-06-01"},
            )
    retired = (
        "model: claude-opus-4-1 was retired on 2026-08-05 and no longer serves requests; "
        "choose an active model (GET /v1/models lists them)"
    )
    assert [retired, retired] == [created.value.api_message, counted.value.api_message]
    assert "retired" == info.lifecycle
    assert (404, "not_found_error") == (raw.status_code, raw.json()["error"]["type"])
    assert "was retired on 2026-06-15" in raw.json()["error"]["message"]


async def test_the_new_tokenizer_counts_more_in_usage_and_count_tokens() -> None:
    """On 5.x a request counts 1.3 tokens per estimated token; on Haiku 4.5 the estimate."""
    estimate = estimate_payload_tokens({"messages": HELLO})
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        counts = [
            (await client.messages.count_tokens(model=model, messages=HELLO)).input_tokens
            for model in ("claude-sonnet-5-5", "claude-haiku-4-5")
        ]
        usage = (
            await client.messages.create(model="claude-sonnet-5-5", max_tokens=10, messages=HELLO)
        ).usage
    assert [scaled(estimate), estimate] == counts
    assert scaled(estimate) == usage.input_tokens
    assert estimate < scaled(estimate)


async def test_the_cache_split_scales_and_still_adds_up() -> None:
    """Written and read cache tokens scale too; the three parts sum to the scaled total."""
    system: list[Any] = [
        {"type": "text", "text": "Rules. " * 800, "cache_control": {"type": "ephemeral"}}
    ]
    estimate = estimate_payload_tokens({"system": system, "messages": HELLO})
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        first, second = [
            (
                await client.messages.create(
                    model="claude-haiku-5-5", max_tokens=10, system=system, messages=HELLO
                )
            ).usage
            for _ in range(2)
        ]
    written = first.cache_creation_input_tokens or 0
    assert [scaled(estimate)] * 2 == [
        u.input_tokens + (u.cache_creation_input_tokens or 0) + (u.cache_read_input_tokens or 0)
        for u in (first, second)
    ]
    assert (written, written) == (second.cache_read_input_tokens, first.cache_creation_input_tokens)
    assert estimate_payload_tokens({"system": system, "messages": []}) * 13 // 10 == written


async def test_prompt_too_long_counts_with_the_model_tokenizer() -> None:
    """A prompt that fits by the estimate but not at 1.3x is too long on a 5.x model only."""
    estimate = estimate_payload_tokens({"messages": HELLO})
    async with MessagesAPIStandIn(context_window=estimate) as api, sdk(api) as client:
        await client.messages.create(model="claude-haiku-4-5", max_tokens=10, messages=HELLO)
        with pytest.raises(anthropic.BadRequestError) as caught:
            await client.messages.create(model="claude-opus-5-5", max_tokens=10, messages=HELLO)
    assert (
        f"prompt is too long: {scaled(estimate)} tokens > {estimate} maximum"
        == caught.value.api_message
    )


async def test_a_table_row_can_set_the_ratio_and_keeps_the_old_fields() -> None:
    """A row built from the old fields takes the id's defaults; `token_ratio=1.0` overrides."""
    row = StandInModel(
        id="claude-opus-5-5", display_name="Opus", max_input_tokens=50_000, max_tokens=8_000
    )
    flat = row.model_copy(update={"token_ratio": 1.0})
    estimate = estimate_payload_tokens({"messages": HELLO})
    async with MessagesAPIStandIn(models={row.id: flat}) as api, sdk(api) as client:
        counted = await client.messages.count_tokens(model=row.id, messages=HELLO)
        info = await client.models.retrieve(row.id)
    assert (1.3, "opus", "omitted", False) == (
        row.token_ratio,
        row.line,
        row.thinking_display,
        row.between_tools_as_thinking,
    )
    assert (estimate, 50_000, "opus") == (counted.input_tokens, info.max_input_tokens, info.line)
    assert "token_ratio" not in row.info()
