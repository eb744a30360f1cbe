"""The stand-in plays server-side context management: the `anthropic-beta` header, the checks
of `context_management`, clearing before counting, compaction (paused or not) with its
`usage.iterations`, compaction blocks sent back, streaming, and thinking after a compaction."""

from __future__ import annotations

import copy
from typing import Any

import anthropic
import pytest
from anthropic import AsyncAnthropic

from baton.context.server_edits import (
    CLEAR_TOOL_USES_EDIT,
    CLEARED_TOOL_RESULT,
    COMPACT_BETA,
    COMPACT_EDIT,
    CONTEXT_MANAGEMENT_BETA,
)
from baton.context.tokens import estimate_payload_tokens
from baton.testing import DEFAULT_MODELS, MessagesAPIStandIn

BETAS = [COMPACT_BETA, CONTEXT_MANAGEMENT_BETA]
TOOLS: list[Any] = [{"name": "Read", "input_schema": {"type": "object"}}]
COMPACT_AT = {"type": "input_tokens", "value": 50_000}


def sdk(api: MessagesAPIStandIn) -> AsyncAnthropic:
    return AsyncAnthropic(api_key=api.api_key, base_url=api.base_url, max_retries=0)


def history(count: int, result_chars: int = 4000) -> list[Any]:
    """A task and `count` tool calls, each answered by a long result."""
    messages: list[Any] = [{"role": "user", "content": "Read every part of the design."}]
    for n in range(count):
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"toolu_{n}", "name": "Read", "input": {}}],
            }
        )
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "x" * result_chars}
        messages.append({"role": "user", "content": [result]})
    return messages


def compact(**settings: Any) -> dict[str, Any]:
    return {"edits": [{"type": COMPACT_EDIT, "trigger": COMPACT_AT, **settings}]}


async def create(client: AsyncAnthropic, model: str = "claude-haiku-5-5", **body: Any) -> Any:
    options = {"max_tokens": 1024, "tools": TOOLS, **body}
    return await client.beta.messages.create(model=model, **options)


async def refusal(client: AsyncAnthropic, **body: Any) -> str:
    with pytest.raises(anthropic.BadRequestError) as caught:
        await create(client, **body)
    assert "invalid_request_error" == caught.value.type
    return caught.value.api_message


async def test_an_edit_without_its_beta_or_of_the_wrong_shape_is_a_400() -> None:
    """The compact edit with only the context-editing beta, and a trigger under the minimum,
    are 400s worded like the API's, recorded with their problems."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        missing = await refusal(
            client,
            messages=history(1),
            betas=[CONTEXT_MANAGEMENT_BETA],
            context_management={"edits": [{"type": COMPACT_EDIT}]},
        )
        low = await refusal(
            client,
            messages=history(1),
            betas=BETAS,
            context_management={
                "edits": [{"type": COMPACT_EDIT, "trigger": {"type": "input_tokens", "value": 10}}]
            },
        )
        recorded = [r.problems for r in api.requests_to("messages")]
    assert (
        "context_management.edits.0.type: 'compact_20260112' requires the beta "
        "'compact-2026-01-12'; send it in the `anthropic-beta` header"
    ) == missing
    assert (
        "context_management.edits.0.trigger.value: Input should be greater than or equal to 50000"
    ) == low
    assert [(missing,), (low,)] == recorded


async def test_a_model_whose_row_says_unsupported_refuses_the_edit() -> None:
    """A model row whose capabilities say no compaction answers the compact edit with a 400
    naming the model and what to set; Haiku 4.5 says so from its id."""
    models = dict(DEFAULT_MODELS)
    card = models["claude-haiku-5-5"]
    capabilities = copy.deepcopy(card.capabilities)
    capabilities["context_management"][COMPACT_EDIT] = {"supported": False}
    models["claude-haiku-5-5"] = card.model_copy(update={"capabilities": capabilities})
    async with MessagesAPIStandIn(models=models) as api, sdk(api) as client:
        refused = await refusal(
            client, messages=history(1), betas=BETAS, context_management=compact()
        )
        info = await client.models.retrieve("claude-haiku-4-5")
    assert (
        "context_management.edits.0: claude-haiku-5-5 does not support compact_20260112; "
        'set strategy = "summarize" in [actors.<name>]'
    ) == refused
    assert info.capabilities is not None
    support = info.capabilities.context_management
    assert support is not None
    assert (False, True) == (
        support.compact_20260112 is not None and support.compact_20260112.supported,
        support.clear_tool_uses_20250919 is not None and support.clear_tool_uses_20250919.supported,
    )


async def test_tool_results_are_cleared_before_the_input_is_counted() -> None:
    """Past its trigger, clear_tool_uses shrinks what the request is billed for, and the
    reply reports the edit; the same request without edits is billed whole."""
    messages = history(20)
    edit = {"type": CLEAR_TOOL_USES_EDIT, "trigger": {"type": "input_tokens", "value": 5000}}
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        whole = await create(client, messages=messages)
        cleared = await create(
            client, messages=messages, betas=BETAS, context_management={"edits": [edit]}
        )
        (_, sent) = api.requests_to("messages")
    assert sent.headers["anthropic-beta"] == ",".join(BETAS)
    assert cleared.context_management is not None
    (applied,) = cleared.context_management.applied_edits
    assert (CLEAR_TOOL_USES_EDIT, 17) == (applied.type, applied.cleared_tool_uses)
    assert whole.usage.input_tokens - applied.cleared_input_tokens == cleared.usage.input_tokens
    assert None is whole.context_management


async def test_a_paused_compaction_answers_with_its_block_and_keeps_the_queued_reply() -> None:
    """Past the compact trigger with `pause_after_compaction`, the reply is the compaction
    block alone (`stop_reason: compaction`), billed in its own iteration only; the queued
    reply answers the request that sends the block back, which reads from the block on."""
    messages = history(60)
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        api.reply("Continuing from the summary.")
        paused = await create(
            client,
            messages=messages,
            betas=BETAS,
            context_management=compact(pause_after_compaction=True),
        )
        block = paused.content[0].to_dict()
        resumed = await create(
            client,
            messages=[*messages, {"role": "assistant", "content": [block]}],
            betas=BETAS,
            context_management=compact(pause_after_compaction=True),
        )
    assert ("compaction", ["compaction"]) == (paused.stop_reason, [b.type for b in paused.content])
    assert {"content", "encrypted_content", "signature", "type"} == set(block)
    assert (0, 0) == (paused.usage.input_tokens, paused.usage.output_tokens)
    (spent,) = paused.usage.iterations or []
    assert "compaction" == spent.type
    assert 50_000 < spent.input_tokens  # the whole history was read to write it
    assert ["Continuing from the summary."] == [b.text for b in resumed.content]
    seen = {"tools": TOOLS, "messages": [{"role": "assistant", "content": [block]}]}
    assert DEFAULT_MODELS["claude-haiku-5-5"].tokens(
        estimate_payload_tokens(seen)
    ) == resumed.usage.input_tokens + (resumed.usage.cache_read_input_tokens or 0)


async def test_without_a_pause_the_reply_follows_the_compaction_block() -> None:
    """Without a pause the compaction block comes first and the reply follows; `iterations`
    lists the compaction, then the message, whose counts are the top-level ones."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        api.reply("Summarised and going on.")
        reply = await create(
            client, messages=history(60), betas=BETAS, context_management=compact()
        )
    assert ["compaction", "text"] == [b.type for b in reply.content]
    assert "end_turn" == reply.stop_reason
    compaction, message = reply.usage.iterations or []
    assert ("compaction", "message") == (compaction.type, message.type)
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (
        message.input_tokens,
        message.output_tokens,
    )


async def test_a_compaction_block_changed_or_undeclared_is_refused() -> None:
    """A compaction block sent back with its summary changed is a 400 at that block; one sent
    without the compact edit declared is a 400 too."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        paused = await create(
            client,
            messages=history(60),
            betas=BETAS,
            context_management=compact(pause_after_compaction=True),
        )
        block = paused.content[0].to_dict()
        changed = {**block, "content": block["content"] + " (edited)"}
        after = [{"role": "assistant", "content": [changed]}, {"role": "user", "content": "go"}]
        edited = await refusal(client, messages=after, betas=BETAS, context_management=compact())
        after[0]["content"] = [block]
        undeclared = await refusal(client, messages=after, betas=BETAS)
    assert (
        "messages.0.content.0: Invalid `signature` in `compaction` block: send it back exactly "
        "as it was received."
    ) == edited
    assert undeclared.startswith(
        "messages.0.content.0: a request carrying a `compaction` block must declare"
    )


async def test_a_streamed_compaction_block_is_the_one_a_plain_call_gets() -> None:
    """Streamed, the compaction block reaches the SDK whole (summary, encrypted content and
    signature), with the iterations and the report of the edits."""
    request = {"messages": history(60), "betas": BETAS, "context_management": compact()}
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        api.reply("one", "two")
        plain = await create(client, **request)
        async with client.beta.messages.stream(
            model="claude-haiku-5-5", max_tokens=1024, tools=TOOLS, **request
        ) as events:
            streamed = await events.get_final_message()
    block, text = streamed.content
    assert plain.content[0].to_dict()["content"] == block.to_dict()["content"]
    assert {"content", "encrypted_content", "signature", "type"} == set(block.to_dict())
    assert plain.content[0].encrypted_content == block.to_dict()["encrypted_content"]
    assert "two" == getattr(text, "text", None)
    assert ["compaction", "message"] == [i.type for i in streamed.usage.iterations or []]
    assert streamed.context_management is not None
    assert [] == streamed.context_management.applied_edits


async def test_thinking_goes_on_from_a_compaction_block_through_a_tool_loop() -> None:
    """On a model that always thinks, a compaction mid-session: the reply after the block
    thinks and calls a tool, and the loop continues from the block; a thinking block behind
    it is never checked (the server ignores what precedes the latest compaction block)."""
    messages = history(60)
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        api.reply({"tool_use": {"name": "Read", "input": {"part": 61}}}, "Done.")
        first = await create(
            client, "claude-opus-5-5", messages=messages, betas=BETAS, context_management=compact()
        )
        content = [b.to_dict() for b in first.content]
        (tool_use,) = [b for b in content if b["type"] == "tool_use"]
        result = {"type": "tool_result", "tool_use_id": tool_use["id"], "content": "part 61"}
        forged = {"type": "thinking", "thinking": "never issued", "signature": "x.y"}
        messages[1]["content"].insert(0, forged)
        after = [
            *messages,
            {"role": "assistant", "content": content},
            {"role": "user", "content": [result]},
        ]
        done = await create(
            client, "claude-opus-5-5", messages=after, betas=BETAS, context_management=compact()
        )
    assert ["compaction", "thinking", "tool_use"] == [b["type"] for b in content]
    assert ["thinking", "text"] == [b.type for b in done.content]
    assert [200, 200] == [r.status for r in api.requests_to("messages")]


async def test_count_tokens_counts_what_the_edits_leave() -> None:
    """count_tokens with context management counts the cleared request and reports the
    count before the edits as `original_input_tokens`."""
    messages = history(20)
    edit = {"type": CLEAR_TOOL_USES_EDIT, "trigger": {"type": "input_tokens", "value": 5000}}
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        counted = await client.beta.messages.count_tokens(
            model="claude-haiku-5-5",
            messages=messages,
            betas=BETAS,
            context_management={"edits": [edit]},
        )
    card = DEFAULT_MODELS["claude-haiku-5-5"]
    cleared = copy.deepcopy(messages)
    for message in cleared[2:-6:2]:
        message["content"][0]["content"] = CLEARED_TOOL_RESULT
    assert card.tokens(estimate_payload_tokens({"messages": cleared})) == counted.input_tokens
    assert counted.context_management is not None
    assert (
        card.tokens(estimate_payload_tokens({"messages": messages}))
        == counted.context_management.original_input_tokens
    )
