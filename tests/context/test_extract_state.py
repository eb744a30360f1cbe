"""`extract_state`: a typed state, folded each turn and injected ahead of the recent steps."""

from __future__ import annotations

import json
from typing import Any

from ctx_factories import SYSTEM, TOOLS, assert_valid, fixed_summarizer, tool_step

from baton.context.conversation import Conversation
from baton.context.extract_state import STATE_TAG, ExtractStateStrategy, WorkingState
from baton.context.payload import Payload
from baton.context.strategy import ContextBudget


def _budget(**overrides: Any) -> ContextBudget:
    values: dict[str, Any] = {
        "context_window": 40_000,
        "compact_threshold": 20_000,
        "keep_recent_steps": 2,
    }
    return ContextBudget(**{**values, **overrides})


def _state_of(payload: Payload) -> dict[str, Any]:
    text = payload["messages"][0]["content"][0]["text"]  # type: ignore[index,typeddict-item]
    body = text.split(f"<{STATE_TAG}>\n", 1)[1].split(f"\n</{STATE_TAG}>", 1)[0]
    data: dict[str, Any] = json.loads(body)
    return data


def _work(conversation: Conversation) -> None:
    conversation.start_round("生成请假申请场景")
    tool_step(conversation, tools=1, tool_name="Read", path="scenarios/leave/rules.md")
    tool_step(conversation, tools=1, tool_name="Write", path="scenarios/leave/design.md")
    tool_step(
        conversation,
        tools=1,
        text="- [ ] validate sample_003 against rules",
        path="scenarios/leave/samples/sample_003.json",
    )
    tool_step(conversation, tools=0, text="设计完成。")
    conversation.start_round("second task")
    tool_step(conversation, tools=1)
    tool_step(conversation, tools=1)


def test_older_steps_are_folded_into_the_injected_state() -> None:
    """Files read and written, tool counts, ids, pending items, finished rounds: in the state."""
    conversation = Conversation()
    _work(conversation)
    strategy = ExtractStateStrategy(_budget())
    payload = strategy.compose_payload(SYSTEM, TOOLS, conversation)
    state = _state_of(payload)
    assert [
        "scenarios/leave/rules.md",
        "scenarios/leave/samples/sample_003.json",
    ] == state["files_read"]
    assert ["scenarios/leave/design.md"] == state["files_written"]
    assert {"Read": 2, "Write": 1} == state["tool_calls"]
    assert "sample_003" in state["ids"]
    assert ["validate sample_003 against rules"] == state["pending"]
    assert (["生成请假申请场景"], ["设计完成。"]) == (state["goals"], state["answers"])
    assert payload["messages"][0]["content"][1] == {"type": "text", "text": "second task"}
    assert 1 + 2 * 2 == len(payload["messages"])
    assert_valid(payload)


def test_the_state_is_updated_each_turn_incrementally() -> None:
    """Each new step pushes one more step into the state; nothing is refolded."""
    conversation = Conversation()
    conversation.start_round("go")
    strategy = ExtractStateStrategy(_budget(keep_recent_steps=2))
    folded = []
    for _ in range(6):
        tool_step(conversation, tools=1)
        strategy.on_turn_complete(conversation)
        folded.append(strategy.state.steps_folded)
    assert [0, 0, 1, 2, 3, 4] == folded


def test_nothing_to_fold_means_no_state_block() -> None:
    """A short conversation is shown as it is, without an empty state."""
    conversation = Conversation()
    conversation.start_round("go")
    tool_step(conversation, tools=1)
    payload = ExtractStateStrategy(_budget()).compose_payload(SYSTEM, TOOLS, conversation)
    assert [{"type": "text", "text": "go"}] == payload["messages"][0]["content"]


async def test_compaction_carries_the_state_and_a_replay_resumes_it() -> None:
    """No model call; the state becomes the summary; a fresh strategy rebuilds the same payload."""
    conversation = Conversation()
    _work(conversation)
    strategy = ExtractStateStrategy(_budget())
    seen: list[Payload] = []
    record = await strategy.compact(conversation, fixed_summarizer("unused", seen))
    assert ([], "fallback", 2) == (seen, record.mode, record.kept_steps)
    WorkingState.model_validate_json(record.summary or "")
    live = strategy.compose_payload(SYSTEM, TOOLS, conversation)
    fresh = ExtractStateStrategy(_budget()).compose_payload(SYSTEM, TOOLS, conversation)
    assert live == fresh
    assert ["scenarios/leave/design.md"] == _state_of(live)["files_written"]
    assert_valid(live)


async def test_a_summary_from_another_strategy_is_kept_in_the_state() -> None:
    """Switching to extract_state after an LLM summary keeps that summary's text."""
    conversation = Conversation()
    conversation.start_round("go")
    for _ in range(3):
        tool_step(conversation, tools=1)
    conversation.apply(
        {
            "type": "compaction",
            "strategy": "summarize",
            "mode": "llm",
            "summary": '{"pending_actions": ["ship it"]}',
            "first_kept_seq": 2,
            "tokens_before": 10,
            "tokens_after": 5,
            "kept_steps": 1,
            "summary_tokens": 3,
            "latency_ms": 1.0,
        }
    )
    tool_step(conversation, tools=1)
    tool_step(conversation, tools=1)
    payload = ExtractStateStrategy(_budget(keep_recent_steps=1)).compose_payload(
        SYSTEM, TOOLS, conversation
    )
    assert "ship it" in _state_of(payload)["earlier_summary"]
