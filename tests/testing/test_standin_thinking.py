"""Thinking in the stand-in: blocks it issues and signs, and the 400s for blocks sent back wrong."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from anthropic import AsyncAnthropic
from anthropic.types import Message

from baton.testing import DEFAULT_MODELS, HIDDEN_THINKING_TOKENS, DroppedBlock, MessagesAPIStandIn

OPUS = "claude-opus-5-5"
SONNET = "claude-sonnet-5-5"
TOOLS: list[Any] = [{"name": "Read", "input_schema": {"type": "object"}}]
ADAPTIVE: Any = {"type": "adaptive"}
DROP: Any = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
INVALID = "Invalid `signature` in `thinking` block."
BOUND = (
    f"{INVALID} The block is bound to a different conversation. Remove the block, or set "
    '`thinking.block_binding.prefix_mismatch_behavior` to "drop_block".'
)


def sdk(api: MessagesAPIStandIn) -> AsyncAnthropic:
    return AsyncAnthropic(api_key=api.api_key, base_url=api.base_url, max_retries=0)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(message: Message) -> dict[str, Any]:
    """The reply as an assistant message, every block exactly as received."""
    return {
        "role": "assistant",
        "content": [b.model_dump(exclude_unset=True) for b in message.content],
    }


def results(message: Message) -> dict[str, Any]:
    """A user message answering every tool call of `message`."""
    return {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": block.id, "content": f"ran {block.name}"}
            for block in message.content
            if block.type == "tool_use"
        ],
    }


def read(path: str, text: str = "Reading it.") -> dict[str, Any]:
    return {"text": text, "tool_use": {"name": "Read", "input": {"path": path}}}


async def ask(
    client: AsyncAnthropic, messages: list[Any], model: str = OPUS, **options: Any
) -> Message:
    return await client.messages.create(
        model=model, max_tokens=1000, messages=messages, tools=TOOLS, **options
    )


async def refusal(client: AsyncAnthropic, messages: list[Any], **options: Any) -> str:
    with pytest.raises(anthropic.BadRequestError) as caught:
        await ask(client, messages, **options)
    return caught.value.api_message


async def test_opus_5_5_always_thinks_and_hides_its_thinking_by_default() -> None:
    """Without a thinking field Opus 5.5 opens with an empty, signed thinking block."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        api.reply("Hi.")
        message = await ask(client, [user("Hello")])
        await ask(client, [user("Hello"), assistant(message), user("And?")])
    assert [("thinking", ""), ("text", None)] == [
        (block.type, getattr(block, "thinking", None)) for block in message.content
    ]
    assert [200, 200] == [r.status for r in api.requests_to("messages")]
    assert message.usage.output_tokens_details is not None
    assert HIDDEN_THINKING_TOKENS == message.usage.output_tokens_details.thinking_tokens


async def test_sonnet_5_5_thinks_only_when_asked_and_shows_a_summary() -> None:
    """Sonnet 5.5 answers plainly by default and with summarized thinking under adaptive."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        plain = await ask(client, [user("Plan the release")], model=SONNET)
        thought = await ask(client, [user("Plan the release")], model=SONNET, thinking=ADAPTIVE)
        shown = await ask(client, [user("Plan it")], thinking={**ADAPTIVE, "display": "summarized"})
    assert ["text"] == [block.type for block in plain.content]
    assert [
        ("thinking", "Considering: Plan the release"),
        ("thinking", "Considering: Plan it"),
    ] == [(m.content[0].type, getattr(m.content[0], "thinking", None)) for m in (thought, shown)]


async def test_a_streamed_thinking_reply_reassembles_with_its_signature() -> None:
    """Thinking streams as deltas and one signature_delta; the SDK rebuilds the exact block."""
    async with MessagesAPIStandIn(chunk_chars=8) as api, sdk(api) as client:
        api.reply("Done.", "Done.")
        plain = await ask(client, [user("Stream a long thought")], model=SONNET, thinking=ADAPTIVE)
        raw = await client.messages.create(
            model=SONNET,
            max_tokens=1000,
            messages=[user("Stream a long thought")],
            thinking=ADAPTIVE,
            stream=True,
        )
        deltas = [
            e.delta.type async for e in raw if e.type == "content_block_delta" and e.index == 0
        ]
        async with client.messages.stream(
            model=SONNET,
            max_tokens=1000,
            messages=[user("Stream a long thought")],
            tools=TOOLS,
            thinking=ADAPTIVE,
        ) as stream:
            final = await stream.get_final_message()
        history = [user("Stream a long thought"), assistant(final), user("Go on")]
        await ask(client, history, model=SONNET, thinking=ADAPTIVE)
    assert ["thinking_delta"] * 5 + ["signature_delta"] == deltas
    assert [(b.type, getattr(b, "thinking", None)) for b in plain.content] == [
        (b.type, getattr(b, "thinking", None)) for b in final.content
    ]
    assert 200 == api.requests_to("messages")[-1].status


async def test_a_three_step_tool_loop_echoing_the_content_is_accepted() -> None:
    """Sending each reply back unchanged, thinking included, keeps a tool loop going."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        api.reply(read("a.md"), read("b.md"), "Both read.")
        messages: list[Any] = [user("Read a.md and b.md")]
        for _ in range(2):
            reply = await ask(client, messages)
            messages += [{"role": "assistant", "content": reply.content}, results(reply)]
        last = await ask(client, messages)
    assert ["thinking", "text"] == [block.type for block in last.content]
    assert [200, 200, 200] == [r.status for r in api.requests_to("messages")]
    assert [(), (), ()] == [r.dropped_blocks for r in api.requests_to("messages")]


async def test_a_thinking_block_the_standin_did_not_issue_is_refused() -> None:
    """A forged signature, or one from another stand-in, is an invalid signature."""
    forged = {"type": "thinking", "thinking": "", "signature": "EqQBCkgIARABGAIiQL"}
    async with MessagesAPIStandIn() as other, sdk(other) as elsewhere:
        foreign = (await ask(elsewhere, [user("Hi")])).content[0].model_dump()
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        messages = [
            [user("Hi"), {"role": "assistant", "content": [block, {"type": "text", "text": "Yo"}]}]
            for block in (forged, foreign)
        ]
        refused = [await refusal(client, [*m, user("Again")]) for m in messages]
    assert [f"messages.1.content.0: {INVALID}"] * 2 == refused


async def test_a_changed_thinking_block_is_refused() -> None:
    """Changed text: 'cannot be modified' in the latest assistant turn, invalid signature before."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        first = await ask(client, [user("One")], model=SONNET, thinking=ADAPTIVE)
        history = [user("One"), assistant(first), user("Two")]
        second = await ask(client, history, model=SONNET, thinking=ADAPTIVE)
        changed = [*history, assistant(second), user("Three")]
        changed[3]["content"][0]["thinking"] += " (edited)"
        latest = await refusal(client, changed, model=SONNET, thinking=ADAPTIVE)
        changed = [*history, assistant(second), user("Three")]
        changed[1]["content"][0]["thinking"] = "Something else"
        earlier = await refusal(client, changed, model=SONNET, thinking=ADAPTIVE)
    assert (
        "messages.3.content.0: `thinking` or `redacted_thinking` blocks in the latest assistant "
        "message cannot be modified. These blocks must remain as they were in the original "
        "response."
    ) == latest
    # The later block was written after the edited one, so its binding breaks as well.
    assert [f"messages.1.content.0: {INVALID}", f"messages.3.content.0: {BOUND}"] == (
        earlier.split("; ")
    )


async def test_a_tool_loop_continued_without_its_thinking_is_refused() -> None:
    """Leaving out (or moving) the thinking of the reply a tool result answers is a 400."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        api.reply(read("a.md"))
        reply = await ask(client, [user("Read a.md")])
        without = assistant(reply)
        without["content"] = without["content"][1:]
        missing = await refusal(client, [user("Read a.md"), without, results(reply)])
        moved = assistant(reply)
        moved["content"][0:2] = moved["content"][1::-1]
        reordered = await refusal(client, [user("Read a.md"), moved, results(reply)], thinking=DROP)
    assert (
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`. "
        "When `thinking` is enabled, a final `assistant` message must start with a thinking "
        "block (preceeding the lastmost set of `tool_use` and `tool_result` blocks)."
    ) == missing
    assert reordered.startswith(
        "messages.1: the `thinking` and `redacted_thinking` blocks of the latest assistant "
        "message must be sent back as they were received"
    )


async def test_thinking_of_an_earlier_turn_may_be_left_out() -> None:
    """Outside the current tool loop, an older turn's thinking can be dropped by the caller."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        api.reply(read("a.md"), "Read it.")
        reply = await ask(client, [user("Read a.md")])
        loop = [user("Read a.md"), assistant(reply), results(reply)]
        done = await ask(client, loop)
        bare = [
            {**m, "content": [b for b in m["content"] if b["type"] != "thinking"]}
            if m["role"] == "assistant"
            else m
            for m in loop
        ]
        answer = await ask(
            client, [*bare, {"role": "assistant", "content": "Read it."}, user("Ok")]
        )
    assert ["thinking", "text"] == [block.type for block in answer.content]
    assert ("tool_use", "end_turn") == (reply.stop_reason, done.stop_reason)


async def test_a_thinking_block_behind_an_edited_history_is_refused() -> None:
    """Editing the history before a block, or leaving out a block before it, breaks its binding."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        first = await ask(client, [user("One")])
        history = [user("One"), assistant(first), user("Two")]
        second = await ask(client, history)
        edited = [user("One, edited"), assistant(first), user("Two"), assistant(second), user("3")]
        refused_edit = await refusal(client, edited)
        skipped = [*history, assistant(second), user("Three")]
        skipped[1]["content"] = skipped[1]["content"][1:]
        refused_skip = await refusal(client, skipped)
    assert f"messages.1.content.0: {BOUND}; messages.3.content.0: {BOUND}" == refused_edit
    assert f"messages.3.content.0: {BOUND}" == refused_skip


async def test_drop_block_drops_the_mismatched_block_and_every_later_one() -> None:
    """Under prefix_mismatch_behavior drop_block the request goes on without those blocks."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        first = await ask(client, [user("One")])
        history = [user("One"), assistant(first), user("Two")]
        second = await ask(client, history)
        edited = [user("One, edited"), assistant(first), user("Two"), assistant(second), user("3")]
        answer = await ask(client, edited, thinking=DROP)
        (request,) = api.requests[-1:]
    assert ["thinking", "text"] == [block.type for block in answer.content]
    assert (
        DroppedBlock(message=1, index=0, type="thinking", reason="prefix_mismatch"),
        DroppedBlock(message=3, index=0, type="thinking", reason="prefix_mismatch"),
    ) == request.dropped_blocks


async def test_a_block_from_another_model_is_dropped_silently() -> None:
    """Thinking Opus 5.5 wrote, sent to Sonnet 5.5, is left out without an error."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        first = await ask(client, [user("One")])
        answer = await ask(client, [user("One"), assistant(first), user("Two")], model=SONNET)
    assert ["text"] == [block.type for block in answer.content]
    assert (DroppedBlock(1, 0, "thinking", "other_model"),) == api.requests[-1].dropped_blocks


async def test_every_nth_thinking_reply_carries_redacted_thinking() -> None:
    """With redacted_thinking_every=2 the 2nd and 4th thinking replies add a redacted block."""
    async with MessagesAPIStandIn(redacted_thinking_every=2) as api, sdk(api) as client:
        plain = [await ask(client, [user(f"Q{n}")]) for n in range(3)]
        async with client.messages.stream(
            model=OPUS, max_tokens=1000, messages=[user("Q3")], tools=TOOLS
        ) as stream:
            streamed = await stream.get_final_message()
        history = [user("Q3"), assistant(streamed), user("More")]
        await ask(client, history)
        history[1]["content"][1]["data"] = "x" + history[1]["content"][1]["data"]
        tampered = await refusal(client, history)
    assert [
        ["thinking", "text"],
        ["thinking", "redacted_thinking", "text"],
        ["thinking", "text"],
        ["thinking", "redacted_thinking", "text"],
    ] == [[block.type for block in m.content] for m in [*plain, streamed]]
    assert "messages.1.content.1: Invalid `data` in `redacted_thinking` block." == tampered


async def test_text_before_a_tool_call_is_thinking_on_sonnet_5_5() -> None:
    """Sonnet 5.5 returns the note before a tool call as thinking, unless its row says not."""
    table = {SONNET: DEFAULT_MODELS[SONNET].model_copy(update={"between_tools_as_thinking": False})}
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        api.reply(read("a.md", "Let me read a.md."), read("a.md", "Let me read a.md."))
        shown = await ask(client, [user("Read a.md")], model=SONNET)
        hidden = await ask(
            client, [user("Read a.md")], model=SONNET, thinking={**ADAPTIVE, "display": "omitted"}
        )
        loop = [user("Read a.md"), assistant(shown), results(shown)]
        await ask(client, loop, model=SONNET)
        without = [
            user("Read a.md"),
            {**assistant(shown), "content": assistant(shown)["content"][1:]},
        ]
        refused = await refusal(client, [*without, results(shown)], model=SONNET)
    async with MessagesAPIStandIn(models=table) as api, sdk(api) as client:
        api.reply(read("a.md", "Let me read a.md."))
        off = await ask(client, [user("Read a.md")], model=SONNET)
    assert [("thinking", "Let me read a.md."), ("tool_use", None)] == [
        (b.type, getattr(b, "thinking", None)) for b in shown.content
    ]
    assert [("thinking", ""), ("thinking", ""), ("tool_use", None)] == [
        (b.type, getattr(b, "thinking", None)) for b in hidden.content
    ]
    assert refused.startswith("messages.1.content.0.type: Expected `thinking`")
    assert ["text", "tool_use"] == [block.type for block in off.content]
