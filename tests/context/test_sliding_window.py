"""`sliding_window`: greedy fill from the newest step inside the budget, whole steps only."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from ctx_factories import SYSTEM, TOOLS, assert_valid, fixed_summarizer, tool_step

from baton.context.conversation import Conversation
from baton.context.payload import Payload
from baton.context.sliding_window import SlidingWindowStrategy
from baton.context.strategy import ContextBudget
from baton.context.tokens import estimate_payload_tokens


def _budget(threshold: int = 3000, **overrides: Any) -> ContextBudget:
    return ContextBudget(
        context_window=threshold * 2,
        compact_threshold=threshold,
        keep_recent_steps=3,
        max_output_tokens=500,
        **overrides,
    )


def _shown_ids(payload: Payload) -> list[str]:
    return [
        b["id"]  # type: ignore[typeddict-item]
        for m in payload["messages"]
        for b in m["content"]
        if b["type"] == "tool_use"  # type: ignore[index]
    ]


def test_the_window_is_the_newest_steps_that_fit() -> None:
    """Steps are taken newest first while they fit; the payload stays inside the budget."""
    conversation = Conversation()
    conversation.start_round("the task")
    for _ in range(30):
        tool_step(conversation, tools=1, result_chars=400)
    budget = _budget()
    strategy = SlidingWindowStrategy(budget)
    payload = strategy.compose_payload(SYSTEM, TOOLS, conversation)
    shown = _shown_ids(payload)
    all_ids = [e.step.tool_uses[0].id for e in conversation.entries]
    assert all_ids[-len(shown) :] == shown
    assert 3 < len(shown) < 30
    assert estimate_payload_tokens(payload) <= budget.compact_threshold - budget.max_output_tokens
    one_more = conversation.entries[-len(shown) - 1].whole_tokens
    assert estimate_payload_tokens(payload) + one_more > 2500
    assert ["the task"] == [b["text"] for b in payload["messages"][0]["content"]]  # type: ignore[typeddict-item]
    assert_valid(payload)


def test_system_tools_and_dynamic_context_come_off_the_budget_first() -> None:
    """A bigger system prompt or round input leaves room for fewer steps."""
    conversation = Conversation()
    conversation.start_round("the task")
    for _ in range(30):
        tool_step(conversation, tools=1, result_chars=400)
    small = SlidingWindowStrategy(_budget()).compose_payload(SYSTEM, TOOLS, conversation)
    big = SlidingWindowStrategy(_budget()).compose_payload(SYSTEM * 40, TOOLS, conversation)
    assert len(_shown_ids(big)) < len(_shown_ids(small))


def test_the_current_step_is_shown_even_alone_over_budget() -> None:
    """The tool results being answered are never dropped, whatever their size."""
    conversation = Conversation()
    conversation.start_round("the task")
    tool_step(conversation, tools=1, result_chars=100)
    tool_step(conversation, tools=2, result_chars=20_000)
    payload = SlidingWindowStrategy(_budget()).compose_payload(SYSTEM, TOOLS, conversation)
    assert [u.id for u in conversation.entries[-1].step.tool_uses] == _shown_ids(payload)
    assert_valid(payload)


def test_earlier_rounds_enter_whole_with_their_input() -> None:
    """A window reaching back into an earlier round shows that round's input first."""
    conversation = Conversation()
    conversation.start_round("first task")
    tool_step(conversation, tools=1, result_chars=100)
    tool_step(conversation, tools=0, text="first done")
    conversation.start_round("second task")
    tool_step(conversation, tools=1, result_chars=100)
    payload = SlidingWindowStrategy(_budget()).compose_payload(SYSTEM, TOOLS, conversation)
    texts = [b.get("text") for m in payload["messages"] for b in m["content"]]  # type: ignore[union-attr]
    assert ["first task", "first done", "second task"] == [t for t in texts if t and "Let" not in t]


async def test_compaction_only_when_the_smallest_window_is_over() -> None:
    """Normal growth never compacts; a step too big for any window does, with no model call."""
    conversation = Conversation()
    conversation.start_round("the task")
    strategy = SlidingWindowStrategy(_budget())
    for _ in range(20):
        tool_step(conversation, tools=1, result_chars=400, usage={"input_tokens": 2400})
        assert False is strategy.should_compact(conversation)
    tool_step(conversation, tools=1, result_chars=30_000, usage={"input_tokens": 2400})
    assert True is strategy.should_compact(conversation)
    seen: list[Payload] = []
    record = await strategy.compact(conversation, fixed_summarizer("unused", seen))
    assert ([], "fallback", None) == (seen, record.mode, record.summary)
    assert record.truncated == [conversation.entries[-1].step.results[0].tool_use_id]
    assert_valid(strategy.compose_payload(SYSTEM, TOOLS, conversation))


def test_refill_anchors_the_window_so_the_prefix_holds() -> None:
    """With refill 0.5 the window drops to half and then only grows at its end for a while."""
    conversation = Conversation()
    conversation.start_round("the task")
    anchored = SlidingWindowStrategy(_budget(), refill=0.5)
    greedy = SlidingWindowStrategy(_budget())
    starts: list[int] = []
    greedy_starts: list[int] = []
    for _ in range(40):
        tool_step(conversation, tools=1, result_chars=400)
        anchored.compose_payload(SYSTEM, TOOLS, conversation)
        greedy.compose_payload(SYSTEM, TOOLS, conversation)
        starts.append(anchored.window_start)
        greedy_starts.append(greedy.window_start)
    moves = sum(1 for a, b in pairwise(starts) if b != a)
    greedy_moves = sum(1 for a, b in pairwise(greedy_starts) if b != a)
    assert sorted(starts) == starts
    assert moves * 3 < greedy_moves
