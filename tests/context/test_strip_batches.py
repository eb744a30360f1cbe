"""`summarize` with `strip_batch_tokens`: older tool results leave in batches, a replay lays
out as the live run did, and the summary request reads the previous request's prefix."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ctx_factories import SYSTEM, TOOLS, assert_valid, fixed_summarizer, summary_text, tool_step

from baton.context.conversation import Conversation
from baton.context.ledger import id_facts
from baton.context.payload import Payload
from baton.context.prompt_cache import PrefixCache
from baton.context.records import dump_record
from baton.context.strategy import ContextBudget
from baton.context.summarize import SummarizeStrategy
from baton.context.summary_format import COMPACT_PROMPT
from baton.errors import UsageError
from baton.pipeline.summaries import InitSummary


def _budget(**overrides: Any) -> ContextBudget:
    values: dict[str, Any] = {
        "context_window": 400_000,
        "compact_threshold": 200_000,
        "keep_recent_steps": 3,
        "max_output_tokens": 1000,
    }
    return ContextBudget(**{**values, **overrides})


def _bare(messages: Any) -> list[Any]:
    return [
        {
            "role": m["role"],
            "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]],
        }
        for m in messages
    ]


def _batched(**options: Any) -> SummarizeStrategy:
    return SummarizeStrategy(_budget(), stride=100, strip_batch_tokens=3000, **options)


def test_the_boundary_moves_once_the_steps_past_n_hold_the_batch() -> None:
    """Steps of just over 1,000 tokens with a 3,000-token batch: the whole part grows from N
    to N+2 steps, then drops back to N; between drops each request only grows at its end."""
    conversation = Conversation()
    conversation.start_round("go")
    strategy = _batched()
    sizes = []
    previous: list[Any] = []
    for _ in range(12):
        tool_step(conversation, tools=1, result_chars=3200)
        strategy.on_turn_complete(conversation)
        payload = strategy.compose_payload(SYSTEM, TOOLS, conversation)
        assert_valid(payload)
        sizes.append(len(conversation.entries) - strategy.boundary)
        messages = _bare(payload["messages"])
        if sizes[-1] > 3:
            assert previous == messages[: len(previous)]
        previous = messages
    assert [1, 2, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3] == sizes


def test_a_huge_result_moves_the_boundary_before_a_stride() -> None:
    """One result over the batch leaves the whole part as soon as it is past the newest N."""
    conversation = Conversation()
    conversation.start_round("go")
    strategy = _batched()
    tool_step(conversation, tools=1, result_chars=40_000)
    for _ in range(3):
        tool_step(conversation, tools=1, result_chars=100)
    strategy.on_turn_complete(conversation)
    assert 1 == strategy.boundary


def test_a_small_threshold_caps_the_batch_at_a_quarter_of_it() -> None:
    """A 3,000-token batch under a 4,000-token threshold acts as a 1,000-token one: the
    steps of just over 1,000 tokens leave one at a time instead of waiting for three."""
    conversation = Conversation()
    conversation.start_round("go")
    strategy = SummarizeStrategy(
        _budget(compact_threshold=4_000, context_window=8_000),
        stride=100,
        strip_batch_tokens=3000,
    )
    sizes = []
    for _ in range(6):
        tool_step(conversation, tools=1, result_chars=3200)
        strategy.on_turn_complete(conversation)
        sizes.append(len(conversation.entries) - strategy.boundary)
    assert [1, 2, 3, 3, 3, 3] == sizes


def test_a_fresh_strategy_and_a_replay_lay_out_as_the_live_run() -> None:
    """The boundary is a function of the steps: composed live step by step, composed once by
    a fresh strategy, and composed from the replayed journal, the request is the same."""
    conversation = Conversation(id="c")
    records: list[Any] = []
    live = _batched()
    for r in range(3):
        records.append(conversation.start_round(f"round {r}"))
        for k in range(5):
            records.append(tool_step(conversation, tools=1, result_chars=1000 + 900 * k))
            live.on_turn_complete(conversation)
            live.compose_payload(SYSTEM, TOOLS, conversation)
    lines = [json.dumps(dump_record(record)) for record in records]
    replayed = Conversation.replay((json.loads(line) for line in lines), "c")
    expected = live.compose_payload(SYSTEM, TOOLS, conversation)
    assert expected == _batched().compose_payload(SYSTEM, TOOLS, conversation)
    assert expected == _batched().compose_payload(SYSTEM, TOOLS, replayed)


async def test_the_summary_request_reads_the_previous_request_from_the_cache() -> None:
    """When the step that makes a compaction due also moves the boundary, the summary request
    keeps the previous request's layout: all of that request is read from the cache, and the
    compact prompt comes after the last breakpoint."""
    conversation = Conversation()
    conversation.start_round("go")
    strategy = SummarizeStrategy(
        _budget(compact_threshold=8_000, context_window=100_000),
        stride=100,
        strip_batch_tokens=3000,
    )
    cache = PrefixCache(clock=lambda: 0.0)
    sent: Payload | None = None
    for _ in range(8):
        tool_step(conversation, tools=1, result_chars=3200)
        strategy.on_turn_complete(conversation)
        sent = strategy.compose_payload(SYSTEM, TOOLS, conversation)
        cache.usage_for(sent)
    assert sent is not None
    before = strategy.boundary
    tool_step(conversation, tools=1, result_chars=3200)
    strategy.on_turn_complete(conversation)
    assert before < strategy.boundary  # the new step alone would re-cut the history
    seen: list[Payload] = []
    await strategy.compact(conversation, fixed_summarizer(summary_text(InitSummary), seen))
    summary_request = seen[0]
    assert _bare(sent["messages"]) == _bare(summary_request["messages"])[: len(sent["messages"])]
    last_block = summary_request["messages"][-1]["content"][-1]
    assert {"type": "text", "text": COMPACT_PROMPT} == last_block
    assert cache.usage_for(sent).total == cache.usage_for(summary_request).cache_read_input_tokens


def test_strip_batch_tokens_must_be_positive() -> None:
    """A batch of no tokens is a caller mistake, refused by name."""
    with pytest.raises(UsageError, match="strip_batch_tokens must be at least 1"):
        SummarizeStrategy(_budget(), strip_batch_tokens=0)


def test_facts_of_stripped_steps_stay_and_requests_between_batches_only_grow() -> None:
    """Before any compaction, an id a tool result carried and a path the agent wrote stay
    in every request after their steps are stripped (a key-facts note after the history),
    and between two moves of the boundary each request still only grows at its end."""
    conversation = Conversation()
    conversation.start_round("go")
    strategy = _batched()
    registered: list[str] = []
    previous: list[Any] = []
    moved = 0
    for n in range(12):
        sample, written = f"BS_MT_{n:03d}", f"scenarios/demo/tools/checker_{n}.py"
        tool_step(
            conversation,
            tool_name="Write",
            path=written,
            result_text=f"wrote it; {sample} failed before\n" + "r" * 3200,
        )
        conversation.register_facts(id_facts([sample], origin="pattern", source="Read"))
        conversation.register_paths([written], source="Write")
        registered += [sample, written]
        before = strategy.boundary
        strategy.on_turn_complete(conversation)
        payload = strategy.compose_payload(SYSTEM, TOOLS, conversation)
        assert_valid(payload)
        shown = json.dumps(payload["messages"], ensure_ascii=False)
        assert [] == [fact for fact in registered if fact not in shown], n
        messages = _bare(payload["messages"])
        if strategy.boundary == before:
            assert previous == messages[: len(previous)]
        else:
            moved += 1
        previous = messages
    assert 0 == conversation.compactions
    assert moved >= 3  # the boundary moved, so results were stripped


def _tool_results(payload: Payload) -> int:
    return sum(1 for m in payload["messages"] for b in m["content"] if b["type"] == "tool_result")


def test_a_new_round_starts_with_the_earlier_rounds_folded() -> None:
    """The round before keeps its input and last answer; its tool results leave at once, not
    only when N newer steps push them out; `fold_rounds=False` keeps the last N whole."""
    conversation = Conversation()
    conversation.start_round("Design the scenario.")
    for _ in range(2):
        tool_step(conversation, result_chars=400)
    tool_step(conversation, tools=0, text="Design written to scenarios/leave/plan.md.")
    conversation.start_round("Approved: generate it.")
    folded = SummarizeStrategy(_budget()).compose_payload(SYSTEM, TOOLS, conversation)
    whole = SummarizeStrategy(_budget(), fold_rounds=False).compose_payload(
        SYSTEM, TOOLS, conversation
    )
    assert (0, 2) == (_tool_results(folded), _tool_results(whole))
    text = json.dumps(folded["messages"], ensure_ascii=False)
    assert "Design the scenario." in text
    assert "Design written to scenarios/leave/plan.md." in text
    assert_valid(folded)
    # The open round's own steps stay whole, as many as N allows.
    tool_step(conversation, result_chars=400)
    again = SummarizeStrategy(_budget()).compose_payload(SYSTEM, TOOLS, conversation)
    assert 1 == _tool_results(again)
