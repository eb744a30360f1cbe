"""The conversation model: rounds, steps, rendering, records and replay."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ctx_factories import SYSTEM, TOOLS, fixed_summarizer, summary_text, tool_step

from baton.context.conversation import Conversation
from baton.context.records import RECORD_TYPES, dump_record, parse_record
from baton.context.strategy import ContextBudget
from baton.context.summarize import SummarizeStrategy
from baton.errors import UsageError
from baton.pipeline.defaults import role_budget
from baton.pipeline.summaries import InitSummary


def test_a_step_renders_as_assistant_then_user_results_and_never_a_tool_role() -> None:
    """A "tool" role's results become tool_result blocks heading the next user message
    (docs/context.md, "Rounds and steps")."""
    conversation = Conversation()
    conversation.start_round("读取文件A")
    tool_step(conversation, tools=2, text="Reading.")
    payload = SummarizeStrategy().compose_payload(SYSTEM, TOOLS, conversation)
    roles = [m["role"] for m in payload["messages"]]
    assert ["user", "assistant", "user"] == roles
    assert ["tool_result", "tool_result"] == [b["type"] for b in payload["messages"][2]["content"]]
    assert "tool" not in json.dumps([m["role"] for m in payload["messages"]])


def test_empty_text_blocks_from_the_model_are_dropped() -> None:
    """A blank text block would be a 400 later, so it never enters the conversation."""
    conversation = Conversation()
    conversation.start_round("go")
    record = conversation.append_step(
        [{"type": "text", "text": "  "}, {"type": "text", "text": "done"}]
    )
    assert ["done"] == [b.text for b in record.step.content]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("content", "results"),
    [
        ([{"type": "tool_use", "id": "a", "name": "Read", "input": {}}], []),
        ([], [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]),
        (
            [{"type": "tool_use", "id": "a", "name": "Read", "input": {}}],
            [{"type": "tool_result", "tool_use_id": "b", "content": "x"}],
        ),
    ],
)
def test_a_step_must_answer_each_tool_use_exactly_once(
    content: list[dict[str, object]], results: list[dict[str, object]]
) -> None:
    """Unanswered calls and results for calls never made are refused at the door."""
    conversation = Conversation()
    conversation.start_round("go")
    with pytest.raises(UsageError, match="exactly once"):
        conversation.append_step(content, results)


def test_a_tool_use_id_cannot_repeat_across_steps() -> None:
    """Reusing an id would make the payload ambiguous (and a 400)."""
    conversation = Conversation()
    conversation.start_round("go")
    use = {"type": "tool_use", "id": "same", "name": "Read", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "same", "content": "x"}
    conversation.append_step([use], [result])
    with pytest.raises(UsageError, match="already used"):
        conversation.append_step([use], [result])


def test_a_step_needs_a_round_and_a_round_needs_text() -> None:
    """No step before the first user input; no blank user input."""
    conversation = Conversation()
    with pytest.raises(UsageError, match="start_round"):
        conversation.append_step([{"type": "text", "text": "hi"}])
    with pytest.raises(UsageError, match="non-empty"):
        conversation.start_round("   ")


def test_awaiting_reply_follows_the_turn() -> None:
    """The model is due after a user input or tool results, not after a final answer."""
    conversation = Conversation()
    assert False is conversation.awaiting_reply
    conversation.start_round("go")
    assert True is conversation.awaiting_reply
    tool_step(conversation, tools=1)
    assert True is conversation.awaiting_reply
    tool_step(conversation, tools=0, text="All done.")
    assert False is conversation.awaiting_reply


def test_composing_when_the_model_is_not_due_is_an_error() -> None:
    """A payload ending in the model's own final answer would be a prefill: refused."""
    conversation = Conversation()
    conversation.start_round("go")
    tool_step(conversation, tools=0, text="All done.")
    with pytest.raises(UsageError, match="nothing for the model"):
        SummarizeStrategy().compose_payload(SYSTEM, TOOLS, conversation)


def test_journal_records_round_trip_through_json_and_replay() -> None:
    """Every mutation's record, dumped to JSON and read back, rebuilds the conversation."""
    conversation = Conversation(id="c1")
    records = [conversation.start_round("生成请假申请场景")]
    records.append(tool_step(conversation, tools=2, usage={"input_tokens": 10, "output_tokens": 5}))
    facts = conversation.register_paths(["scenarios/leave/design.md"], source="Write")
    assert facts is not None
    records.append(facts)
    records.append(tool_step(conversation, tools=0, text="完成"))
    lines = [json.dumps(dump_record(r), ensure_ascii=False) for r in records]
    assert {"round", "step", "facts"} == {json.loads(line)["type"] for line in lines}
    replayed = Conversation.replay((json.loads(line) for line in lines), "c1")
    assert conversation.model_dump() == replayed.model_dump()
    assert ["scenarios/leave/design.md"] == replayed.ledger.paths


def test_record_types_are_the_discriminators() -> None:
    """Journals holding other records can tell conversation records apart by `type`."""
    assert {"round", "step", "facts", "compaction"} == set(RECORD_TYPES)
    with pytest.raises(UsageError, match="not a conversation record"):
        parse_record({"type": "model_response"})


def test_records_out_of_order_are_refused() -> None:
    """A journal whose steps do not follow on is reported, not silently applied."""
    source = Conversation()
    source.start_round("go")
    step = tool_step(source, tools=0, text="ok")
    target = Conversation()
    with pytest.raises(UsageError, match="start_round"):
        target.apply(step)
    target.start_round("go")
    target.apply(step)
    with pytest.raises(UsageError, match="out of order"):
        target.apply(step)


def test_registering_a_known_fact_adds_no_record() -> None:
    """The ledger keeps each fact once; nothing to journal when nothing is new."""
    conversation = Conversation()
    assert conversation.register_paths(["a/b.json"]) is not None
    assert conversation.register_paths(["a/b.json", " "]) is None
    assert ["a/b.json"] == conversation.ledger.paths


def test_a_snapshot_rebuilds_rendering_and_accounting() -> None:
    """`model_dump_json` is a whole snapshot; loading it restores the rendered pieces too."""
    conversation = Conversation()
    conversation.start_round("go")
    tool_step(conversation, tools=1, result_chars=400)
    loaded = Conversation.model_validate_json(conversation.model_dump_json())
    strategy = SummarizeStrategy()
    assert strategy.compose_payload(
        SYSTEM, TOOLS, conversation
    ) == SummarizeStrategy().compose_payload(SYSTEM, TOOLS, loaded)
    assert len(conversation.entries) == len(loaded.entries)


async def test_a_compaction_record_replays_from_its_journal_json() -> None:
    """After a compaction, the journal (as JSON lines) rebuilds the compacted conversation."""
    conversation = Conversation(id="c2")
    records: list[Any] = [conversation.start_round("the task")]
    for _ in range(6):
        records.append(tool_step(conversation, tools=1, result_chars=6000))
    strategy = SummarizeStrategy(role_budget("init"), summary_schema=InitSummary)
    records.append(
        await strategy.compact(conversation, fixed_summarizer(summary_text(InitSummary)))
    )
    records.append(tool_step(conversation, tools=1))
    lines = [json.dumps(dump_record(r), ensure_ascii=False) for r in records]
    replayed = Conversation.replay((json.loads(line) for line in lines), "c2")
    assert conversation.model_dump() == replayed.model_dump()
    assert 4 == len(replayed.entries)
    assert SummarizeStrategy().compose_payload(SYSTEM, TOOLS, conversation) == (
        SummarizeStrategy().compose_payload(SYSTEM, TOOLS, replayed)
    )


def test_a_replay_sizes_the_context_as_the_live_calls_did() -> None:
    """The live calls calibrated the estimator (what was sent against what the API counted);
    a conversation resumed from its journal must come out the same size, or it compacts at
    other points than the uninterrupted run would."""
    live = Conversation(id="c1")
    strategy = SummarizeStrategy()
    records: list[Any] = [live.start_round("go")]
    for index, counted in enumerate((1_500, 2_600, 4_100)):
        payload = strategy.compose_payload(SYSTEM, TOOLS, live)  # notes the sent estimate
        assert payload["messages"]
        # The API counts 1.5-2x the estimate here: calibration has something to learn.
        usage = {"input_tokens": counted, "output_tokens": 40}
        records.append(tool_step(live, tools=1, result_chars=3_000 + index, usage=usage))
    assert live.account.calibration.samples == 3
    replayed = Conversation.replay((json.loads(json.dumps(dump_record(r))) for r in records), "c1")
    assert live.account.calibration.ratio == replayed.account.calibration.ratio
    assert live.context_tokens == replayed.context_tokens


async def test_a_replayed_conversation_composes_its_summary_request_as_the_live_one() -> None:
    """The summary request keeps the layout of the request before it; a conversation rebuilt
    from its journal (after a crash) knows that layout too, so it asks for the same summary."""
    budget = ContextBudget(context_window=400_000, compact_threshold=200_000, keep_recent_steps=2)
    live = Conversation(id="c1")
    strategy = SummarizeStrategy(budget, stride=3, strip_batch_tokens=2_000)
    records: list[Any] = [live.start_round("go")]
    for _ in range(6):
        strategy.compose_payload(SYSTEM, TOOLS, live)
        records.append(tool_step(live, tools=1, result_chars=3_000))
    replayed = Conversation.replay((json.loads(json.dumps(dump_record(r))) for r in records), "c1")
    assert live.composed_layout is not None
    assert live.composed_layout == replayed.composed_layout
    fresh = SummarizeStrategy(budget, stride=3, strip_batch_tokens=2_000)
    fresh._prefix_for(SYSTEM, TOOLS)  # the system and tools a resumed agent passes first
    assert strategy.compaction_payload(live) == fresh.compaction_payload(replayed)


async def test_a_compaction_due_before_any_request_of_a_resumed_process_is_the_live_one() -> None:
    """A process that resumes a conversation and compacts before its first request (the
    journaled reply that crossed the threshold is replayed) asks with the system prompt and
    tools, and keeps the same steps, as the process that was killed would have."""
    budget = ContextBudget(context_window=60_000, compact_threshold=9_000, keep_recent_steps=3)
    live = Conversation(id="c1")
    strategy = SummarizeStrategy(budget)
    records: list[Any] = [live.start_round("go")]
    for _ in range(6):
        strategy.compose_payload(SYSTEM, TOOLS * 40, live)
        records.append(tool_step(live, tools=1, result_chars=4_000))
    replayed = Conversation.replay((json.loads(json.dumps(dump_record(r))) for r in records), "c1")
    text = summary_text(InitSummary)
    asked: list[Any] = []
    live_record = await strategy.compact(live, fixed_summarizer(text, asked))
    resumed = SummarizeStrategy(budget)
    resumed.use_prefix(SYSTEM, TOOLS * 40)
    resumed_record = await resumed.compact(replayed, fixed_summarizer(text, asked))
    assert asked[0] == asked[1]
    assert SYSTEM in json.dumps(asked[1]["system"])
    assert (live_record.first_kept_seq, live_record.tokens_after) == (
        resumed_record.first_kept_seq,
        resumed_record.tokens_after,
    )
