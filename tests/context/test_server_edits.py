"""The simulation of server-side context management: the API's checks of `context_management`,
what the server reads of a request (compaction, clearing) and its extractive summary."""

from __future__ import annotations

import json
from typing import Any

import pytest

from baton.context.payload import Message
from baton.context.prompt_cache import CacheUsage
from baton.context.server_edits import (
    CLEAR_THINKING_EDIT,
    CLEAR_TOOL_USES_EDIT,
    CLEARED_TOOL_RESULT,
    COMPACT_BETA,
    COMPACT_EDIT,
    CONTEXT_MANAGEMENT_BETA,
    SUMMARY_MAX_TOKENS,
    compacted_body,
    edit_problems,
    server_view,
    simulated_compaction,
    since_compaction,
    with_cache_split,
)
from baton.context.tokens import estimate_payload_tokens, estimate_text_tokens
from baton.context.usage import Usage

BOTH = [COMPACT_BETA, CONTEXT_MANAGEMENT_BETA]
THINKING = {"type": "adaptive"}


def tool_turns(count: int, result: str = "r" * 400, name: str = "Read") -> list[Message]:
    """A task, then `count` tool calls each answered by a result of `result`."""
    messages: list[Any] = [{"role": "user", "content": "Build the tools of the design."}]
    for n in range(count):
        result_block = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": result}
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Reading part {n}."},
                    {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": {"n": n}},
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [result_block],
            }
        )
    return messages


def body(*edits: dict[str, Any], messages: list[Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-opus-5-5",
        "max_tokens": 1024,
        "messages": messages if messages is not None else tool_turns(2),
        "context_management": {"edits": list(edits)},
        **extra,
    }


def results(messages: list[Any]) -> list[Any]:
    return [
        b["content"]
        for m in messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]


def test_valid_edits_of_every_kind_pass() -> None:
    """The three edits with every documented setting, clear_thinking first and thinking on,
    both betas sent: no problem."""
    request = body(
        {"type": CLEAR_THINKING_EDIT, "keep": {"type": "thinking_turns", "value": 2}},
        {
            "type": CLEAR_TOOL_USES_EDIT,
            "trigger": {"type": "tool_uses", "value": 10},
            "keep": {"type": "tool_uses", "value": 3},
            "clear_at_least": {"type": "input_tokens", "value": 5000},
            "exclude_tools": ["Write"],
            "clear_tool_inputs": ["Read"],
        },
        {
            "type": COMPACT_EDIT,
            "trigger": {"type": "input_tokens", "value": 50_000},
            "instructions": "Keep the paths.",
            "pause_after_compaction": True,
        },
        thinking=THINKING,
    )
    assert [] == edit_problems(request, BOTH)


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            {"type": "clear_everything"},
            "context_management.edits.0: Input tag 'clear_everything' found using 'type' does "
            "not match any of the expected tags: 'clear_thinking_20251015', "
            "'clear_tool_uses_20250919', 'compact_20260112'",
        ),
        (
            {"type": COMPACT_EDIT, "trigger": {"type": "input_tokens", "value": 49_999}},
            "context_management.edits.0.trigger.value: Input should be greater than or equal "
            "to 50000",
        ),
        (
            {"type": COMPACT_EDIT, "trigger": {"type": "tool_uses", "value": 60_000}},
            "context_management.edits.0.trigger.type: Input should be 'input_tokens'",
        ),
        (
            {"type": COMPACT_EDIT, "pause_after_compaction": "yes"},
            "context_management.edits.0.pause_after_compaction: Input should be a valid boolean",
        ),
        (
            {"type": COMPACT_EDIT, "instructions": 3},
            "context_management.edits.0.instructions: Input should be a string",
        ),
        (
            {"type": CLEAR_TOOL_USES_EDIT, "keep": {"type": "tool_uses", "value": "3"}},
            "context_management.edits.0.keep.value: Input should be a valid integer",
        ),
        (
            {"type": CLEAR_TOOL_USES_EDIT, "keep": 3},
            "context_management.edits.0.keep: must be {'type': 'tool_uses', 'value': <integer>}",
        ),
        (
            {"type": CLEAR_TOOL_USES_EDIT, "clear_at_least": {"type": "tool_uses", "value": 1}},
            "context_management.edits.0.clear_at_least.type: Input should be 'input_tokens'",
        ),
        (
            {"type": CLEAR_TOOL_USES_EDIT, "exclude_tools": "Write"},
            "context_management.edits.0.exclude_tools: Input should be a list of tool names",
        ),
        (
            {"type": CLEAR_TOOL_USES_EDIT, "clear_tool_inputs": "Read"},
            "context_management.edits.0.clear_tool_inputs: Input should be a boolean or tool names",
        ),
        (
            {"type": CLEAR_TOOL_USES_EDIT, "keep_all": True},
            "context_management.edits.0.keep_all: Extra inputs are not permitted",
        ),
        (
            {"type": CLEAR_THINKING_EDIT, "keep": {"type": "thinking_turns", "value": 0}},
            "context_management.edits.0.keep: must be 'all' or {'type': 'thinking_turns', "
            "'value': <integer >= 1>}",
        ),
    ],
)
def test_a_malformed_edit_is_named_where_the_api_would(edit: dict[str, Any], problem: str) -> None:
    """Unknown types, triggers under the minimum, settings of the wrong shape or unknown keys
    are each one problem naming the field."""
    assert [problem] == edit_problems(body(edit, thinking=THINKING), BOTH)


def test_an_edit_without_its_beta_is_refused() -> None:
    """Each edit needs its own beta: the compact edit with only the context-editing beta is
    refused, naming the beta to send."""
    request = body({"type": CLEAR_TOOL_USES_EDIT}, {"type": COMPACT_EDIT})
    assert [
        "context_management.edits.1.type: 'compact_20260112' requires the beta "
        "'compact-2026-01-12'; send it in the `anthropic-beta` header"
    ] == edit_problems(request, [CONTEXT_MANAGEMENT_BETA])


def test_clear_thinking_comes_first_needs_thinking_and_edits_do_not_repeat() -> None:
    """clear_thinking after another edit, without thinking, and a repeated edit: three
    problems; the same edit with thinking a model always does (`thinks`) passes."""
    request = body({"type": COMPACT_EDIT}, {"type": CLEAR_THINKING_EDIT}, {"type": COMPACT_EDIT})
    assert [
        "context_management.edits.1: 'clear_thinking_20251015' must come first in "
        "context_management.edits when combined with other edits",
        "context_management.edits.1: 'clear_thinking_20251015' requires thinking to be enabled",
        "context_management.edits: at most one 'compact_20260112' edit may be given",
    ] == edit_problems(request, BOTH)
    assert [] == edit_problems(body({"type": CLEAR_THINKING_EDIT}), BOTH, thinks=True)


def test_a_compaction_block_needs_the_compact_edit() -> None:
    """A request that sends a compaction block back without declaring the compact edit is
    refused at that block; declaring it is enough."""
    messages = [
        {"role": "assistant", "content": [{"type": "compaction", "content": "summary"}]},
        {"role": "user", "content": "go on"},
    ]
    bare = {"max_tokens": 10, "messages": messages}
    assert [
        "messages.0.content.0: a request carrying a `compaction` block must declare the "
        "'compact_20260112' edit in context_management.edits (beta 'compact-2026-01-12')"
    ] == edit_problems(bare, BOTH)
    assert [] == edit_problems(body({"type": COMPACT_EDIT}, messages=messages), BOTH)


def test_the_view_starts_at_the_latest_compaction_block() -> None:
    """Everything before the latest compaction block is ignored: its assistant message is cut
    to start at it, and the later messages follow."""
    old, new = {"type": "compaction", "content": "old"}, {"type": "compaction", "content": "new"}
    messages: list[Any] = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": [old, {"type": "text", "text": "a"}]},
        {"role": "user", "content": "more"},
        {"role": "assistant", "content": [{"type": "text", "text": "b"}, new]},
        {"role": "user", "content": "latest"},
    ]
    expected = [{"role": "assistant", "content": [new]}, {"role": "user", "content": "latest"}]
    assert expected == since_compaction(messages)
    view = server_view(body({"type": COMPACT_EDIT}, messages=messages))
    assert expected == view.messages
    assert estimate_payload_tokens({"messages": expected}) == view.input_tokens


def test_tool_results_are_cleared_past_the_trigger_but_the_last_ones() -> None:
    """Past the trigger, all but the last `keep` tool results read the placeholder; the
    applied edit counts them and the tokens freed, which the view no longer holds."""
    request = body(
        {
            "type": CLEAR_TOOL_USES_EDIT,
            "trigger": {"type": "input_tokens", "value": 500},
            "keep": {"type": "tool_uses", "value": 2},
        },
        messages=tool_turns(5),
    )
    view = server_view(request)
    assert [CLEARED_TOOL_RESULT] * 3 + ["r" * 400] * 2 == results(view.messages)
    ((applied),) = view.applied_edits
    full = estimate_payload_tokens(request)
    assert {
        "type": CLEAR_TOOL_USES_EDIT,
        "cleared_tool_uses": 3,
        "cleared_input_tokens": full - view.input_tokens,
    } == applied
    assert ["r" * 400] * 5 == results(request["messages"])  # the request itself is unchanged


def test_nothing_is_cleared_under_the_trigger_or_for_less_than_clear_at_least() -> None:
    """Under the trigger (tokens or tool uses), or when clearing would free fewer tokens than
    `clear_at_least`, the view is the request and no edit is reported."""
    messages = tool_turns(5)
    for edit in (
        {"type": "input_tokens", "value": 100_000},
        {"type": "tool_uses", "value": 6},
    ):
        view = server_view(body({"type": CLEAR_TOOL_USES_EDIT, "trigger": edit}, messages=messages))
        assert ([], messages) == (view.applied_edits, view.messages)
    costly = body(
        {
            "type": CLEAR_TOOL_USES_EDIT,
            "trigger": {"type": "tool_uses", "value": 5},
            "clear_at_least": {"type": "input_tokens", "value": 10_000},
        },
        messages=messages,
    )
    assert [] == server_view(costly).applied_edits


def test_excluded_tools_stay_and_inputs_clear_when_asked() -> None:
    """`exclude_tools` keeps a tool's results whatever their age; `clear_tool_inputs` empties
    the inputs of the cleared uses of the tools it names."""
    messages = tool_turns(2, name="Write") + tool_turns(3, name="Read")[1:]
    for n, message in enumerate(messages[5:]):  # the Read turns need their own ids
        for block in message["content"]:
            for key in ("id", "tool_use_id"):
                if key in block:
                    block[key] = f"read_{n // 2}"
    request = body(
        {
            "type": CLEAR_TOOL_USES_EDIT,
            "trigger": {"type": "tool_uses", "value": 1},
            "keep": {"type": "tool_uses", "value": 1},
            "exclude_tools": ["Write"],
            "clear_tool_inputs": ["Read"],
        },
        messages=messages,
    )
    view = server_view(request)
    assert ["r" * 400] * 2 + [CLEARED_TOOL_RESULT] * 2 + ["r" * 400] == results(view.messages)
    inputs = [b["input"] for m in view.messages[1::2] for b in m["content"][1:]]
    assert [{"n": 0}, {"n": 1}, {}, {}, {"n": 2}] == inputs
    assert 2 == view.applied_edits[0]["cleared_tool_uses"]


def test_clear_thinking_keeps_the_last_turns_thinking() -> None:
    """Thinking is dropped from all but the last `keep` assistant turns that thought, and the
    edit reports the turns and tokens it cleared; `keep: all` leaves everything."""
    messages = tool_turns(3)
    for message in messages[1::2]:
        message["content"].insert(0, {"type": "thinking", "thinking": "t" * 80, "signature": "s"})
    request = body({"type": CLEAR_THINKING_EDIT}, messages=messages, thinking=THINKING)
    view = server_view(request)
    thought = [any(b["type"] == "thinking" for b in m["content"]) for m in view.messages[1::2]]
    assert [False, False, True] == thought
    assert ["clear_thinking_20251015", 2] == [
        view.applied_edits[0]["type"],
        view.applied_edits[0]["cleared_thinking_turns"],
    ]
    keep_all = body({"type": CLEAR_THINKING_EDIT, "keep": "all"}, messages=messages)
    assert messages == server_view(keep_all).messages


def test_compaction_is_due_at_its_trigger_in_the_models_tokens() -> None:
    """The compact trigger compares the view's tokens, as `count` turns the estimate into the
    model's: due at the trigger, not below it."""
    messages = tool_turns(200)
    tokens = estimate_payload_tokens({"messages": messages})
    edit = {"type": COMPACT_EDIT, "trigger": {"type": "input_tokens", "value": 50_000}}
    assert tokens < 50_000
    assert not server_view(body(edit, messages=messages)).compaction_due
    scaled = server_view(body(edit, messages=messages), count=lambda n: n * 2)
    assert (True, tokens * 2) == (scaled.compaction_due, scaled.input_tokens)


def test_the_summary_is_extractive_capped_and_deterministic() -> None:
    """The summary holds the task's head and the latest results and assistant texts, stays
    under its cap however long the view, and is the same for the same request."""
    messages = tool_turns(3000, result="result " * 100)
    messages[-1]["content"][0]["content"] = "the newest result names order-4411"
    request = body({"type": COMPACT_EDIT}, messages=messages)
    view = server_view(request)
    block, usage = simulated_compaction(request, view)
    text = block["content"]
    assert text is not None
    assert "Build the tools of the design." in text
    assert "order-4411" in text
    assert "Reading part 2999." in text
    assert estimate_text_tokens(text) <= SUMMARY_MAX_TOKENS + 50
    assert (block, usage) == simulated_compaction(request, view)
    assert estimate_text_tokens(text) == usage.compaction_output_tokens
    assert view.input_tokens < usage.compaction_input_tokens  # the view and the prompt
    assert (0, 0) == (usage.input_tokens, usage.output_tokens)


def test_only_the_key_facts_the_summary_happens_to_extract_are_named() -> None:
    """Of the `<key_facts>` the instructions list, those the extract contains are named again;
    one only mentioned in an old, dropped result is lost (the client must carry it)."""
    messages = tool_turns(400, result="filler " * 60)
    messages[2]["content"][0]["content"] = "found ticket TCK-1 " + "x" * 300
    messages[-1]["content"][0]["content"] = "wrote scenarios/a/plan.md"
    facts = {"key_paths": {"plan": "scenarios/a/plan.md"}, "key_ids": {"ticket": "TCK-1"}}
    instructions = f"Summarize.\n<key_facts>\n{json.dumps(facts)}\n</key_facts>"
    request = body({"type": COMPACT_EDIT, "instructions": instructions}, messages=messages)
    block, _ = simulated_compaction(request, server_view(request))
    assert block["content"] is not None
    assert block["content"].endswith("\nKey facts: scenarios/a/plan.md")
    assert "TCK-1" not in block["content"]


def test_the_compaction_reads_the_cache_as_the_view_would() -> None:
    """`with_cache_split` moves the cached part of the compaction's input into its cache
    fields, the total unchanged; the model then reads just the block."""
    usage = Usage(compaction_input_tokens=1000, compaction_output_tokens=50)
    split = with_cache_split(usage, CacheUsage(100, 300, 500))
    assert (200, 300, 500, 50) == (
        split.compaction_input_tokens,
        split.compaction_cache_creation_input_tokens,
        split.compaction_cache_read_input_tokens,
        split.compaction_output_tokens,
    )
    block = {"type": "compaction", "content": "s"}
    assert [{"role": "assistant", "content": [block]}] == compacted_body(body(), block)["messages"]


@pytest.mark.timeout(20)
def test_a_long_conversation_is_read_in_linear_time() -> None:
    """60,000 messages with a compaction block near the end and every edit on: the view, the
    checks and the summary finish well inside the timeout (a scan per message would not)."""
    messages = tool_turns(30_000, result="r" * 100)
    messages[-4]["content"].insert(0, {"type": "compaction", "content": "s"})
    edits = [
        {"type": CLEAR_THINKING_EDIT},
        {"type": CLEAR_TOOL_USES_EDIT, "trigger": {"type": "tool_uses", "value": 1}},
        {"type": COMPACT_EDIT, "trigger": {"type": "input_tokens", "value": 50_000}},
    ]
    whole = body(*edits, messages=messages, thinking=THINKING)
    assert [] == edit_problems(whole, BOTH)
    uncompacted = body(*edits, messages=messages[1:-4], thinking=THINKING)
    view = server_view(uncompacted)
    simulated_compaction(uncompacted, view)
    assert 4 == len(server_view(whole).messages)
    assert view.compaction_due
    assert 29_995 == view.applied_edits[0]["cleared_tool_uses"]
