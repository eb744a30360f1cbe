"""`summarize`: each rule of docs/context.md, "summarize" and "Compaction"."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from anyio import wait_all_tasks_blocked
from ctx_factories import (
    SYSTEM,
    TOOLS,
    ManualClock,
    assert_valid,
    fixed_summarizer,
    hanging_summarizer,
    summary_text,
    tool_step,
)

from baton.context.conversation import Conversation
from baton.context.events import (
    ContextCompactedEvent,
    ContextWarningEvent,
    ToolResultTruncatedEvent,
)
from baton.context.payload import Payload
from baton.context.records import Compaction
from baton.context.strategy import ContextBudget
from baton.context.summarize import ReadySummary, SummarizeStrategy
from baton.context.summary_format import COMPACT_PROMPT
from baton.pipeline.defaults import role_budget
from baton.pipeline.summaries import ExecuteSummary, InitSummary


def _texts(message: Any) -> list[str]:
    return [b.get("text", b.get("type")) for b in message["content"]]


def _budget(**overrides: Any) -> ContextBudget:
    values: dict[str, Any] = {
        "context_window": 40_000,
        "compact_threshold": 20_000,
        "keep_recent_steps": 3,
        "max_output_tokens": 1000,
    }
    return ContextBudget(**{**values, **overrides})


def _long_round(conversation: Conversation, steps: int, result_chars: int = 200) -> None:
    for _ in range(steps):
        tool_step(conversation, tools=1, result_chars=result_chars)


@pytest.mark.parametrize(
    ("agent", "window", "threshold", "keep"),
    [
        ("init", 1_000_000, 150_000, 3),
        ("execute", 1_000_000, 700_000, 5),
        ("scheduler", 1_000_000, 150_000, 3),
    ],
)
def test_budgets_follow_the_default_table(
    agent: str, window: int, threshold: int, keep: int
) -> None:
    """Every agent has a 1M window; the thresholds stay absolute (150K, 700K, 150K)."""
    budget = role_budget(agent)
    assert (window, threshold, keep) == (
        budget.context_window,
        budget.compact_threshold,
        budget.keep_recent_steps,
    )
    assert (4000, 120.0, "assistant") == (
        budget.summary_max_tokens,
        budget.summary_timeout_s,
        budget.summary_role,
    )


def test_budget_threshold_must_be_inside_the_window() -> None:
    """A threshold at or past the window could never be honoured."""
    with pytest.raises(ValueError, match="must be below"):
        ContextBudget(context_window=100, compact_threshold=100)


def test_history_keeps_first_input_and_last_answer_and_drops_tool_results() -> None:
    """Older rounds show user input + last assistant text; the recent N steps are whole."""
    conversation = Conversation()
    conversation.start_round("读取文件A")
    tool_step(conversation, tools=1, text="Reading A.", result_chars=9000)
    tool_step(conversation, tools=0, text="分析结果：A 有问题。")
    conversation.start_round("second task")
    _long_round(conversation, 3)
    strategy = SummarizeStrategy(_budget(keep_recent_steps=3))
    messages = strategy.compose_payload(SYSTEM, TOOLS, conversation)["messages"]
    assert ["读取文件A"] == _texts(messages[0])
    assert ["分析结果：A 有问题。"] == _texts(messages[1])
    assert ["second task"] == _texts(messages[2])
    assert 2 + 1 + 2 * 3 == len(messages)
    assert "r" * 9000 not in json.dumps(messages)
    assert ["tool_result"] == _texts(messages[-1])


def test_recent_steps_starting_mid_round_carry_the_round_input() -> None:
    """The recent part opens with the user text of its round, not an assistant step."""
    conversation = Conversation()
    conversation.start_round("the task")
    _long_round(conversation, 6)
    strategy = SummarizeStrategy(_budget(keep_recent_steps=2))
    messages = strategy.compose_payload(SYSTEM, TOOLS, conversation)["messages"]
    assert ["the task"] == _texts(messages[0])
    assert 1 + 2 * 2 == len(messages)
    assert conversation.entries[4].step.tool_uses[0].id == messages[1]["content"][1]["id"]  # type: ignore[index,typeddict-item]


def test_should_compact_only_past_the_threshold() -> None:
    """docs/context.md, "Compaction": `total_tokens > COMPACT_TRIGGER_THRESHOLD`, strictly."""
    conversation = Conversation()
    conversation.start_round("go")
    tool_step(conversation, tools=0, text="ok", usage={"input_tokens": 20_000})
    strategy = SummarizeStrategy(_budget())
    assert False is strategy.should_compact(conversation)
    tool_step(conversation, tools=0, text="ok", usage={"input_tokens": 20_001})
    assert True is strategy.should_compact(conversation)
    assert False is strategy.should_compact(conversation, _budget(compact_threshold=30_000))


async def test_compaction_asks_on_the_same_payload_plus_the_mock_prompt() -> None:
    """Same system, tools and messages; the compact prompt appended; 4000 max tokens; no
    temperature (API 2026-10-21 refuses sampling parameters)."""
    conversation = Conversation()
    conversation.start_round("go")
    _long_round(conversation, 5)
    strategy = SummarizeStrategy(_budget(), summary_schema=InitSummary)
    turn = strategy.compose_payload(SYSTEM, TOOLS, conversation)
    seen: list[Payload] = []
    await strategy.compact(conversation, fixed_summarizer(summary_text(InitSummary), seen))
    (asked,) = seen
    assert_valid(asked)
    assert (turn["system"], turn["tools"]) == (asked["system"], asked["tools"])
    assert turn["messages"][:-1] == asked["messages"][:-1]
    assert turn["messages"][-1]["content"] == asked["messages"][-1]["content"][:-1]
    assert {"type": "text", "text": COMPACT_PROMPT} == asked["messages"][-1]["content"][-1]
    assert (None, 4000) == (asked.get("temperature"), asked["max_tokens"])


async def test_compacted_shape_is_prompt_summary_then_recent_n_steps() -> None:
    """[compact prompt (user), summary (assistant), round input (user), last N steps whole]."""
    conversation = Conversation()
    conversation.start_round("the task")
    _long_round(conversation, 7)
    strategy = SummarizeStrategy(_budget(keep_recent_steps=3), summary_schema=InitSummary)
    record = await strategy.compact(conversation, fixed_summarizer(summary_text(InitSummary)))
    messages = strategy.compose_payload(SYSTEM, TOOLS, conversation)["messages"]
    assert [COMPACT_PROMPT] == _texts(messages[0])
    assert "assistant" == messages[1]["role"]
    assert _texts(messages[1])[0].startswith("<compact_summary>")
    assert json.loads(record.summary or "")["analysis_conclusions"] == []
    assert ["the task"] == _texts(messages[2])
    assert 3 + 2 * 3 == len(messages)
    assert ("llm", 3, 4) == (record.mode, record.kept_steps, record.first_kept_seq)
    assert_valid(strategy.compose_payload(SYSTEM, TOOLS, conversation))


async def test_n_stays_constant_over_consecutive_compactions() -> None:
    """Each compaction keeps the configured N; the next summary is asked with the last one."""
    conversation = Conversation()
    conversation.start_round("the task")
    strategy = SummarizeStrategy(_budget(keep_recent_steps=3), summary_schema=ExecuteSummary)
    seen: list[Payload] = []
    kept = []
    for n in range(3):
        _long_round(conversation, 4)
        text = summary_text(ExecuteSummary, pending_work=[f"item {n}"])
        kept.append((await strategy.compact(conversation, fixed_summarizer(text, seen))).kept_steps)
    assert [3, 3, 3] == kept
    assert "item 0" in json.dumps(seen[1]["messages"][1], ensure_ascii=False)
    assert "item 1" in json.dumps(seen[2]["messages"][1], ensure_ascii=False)


async def test_long_tool_results_in_the_kept_part_are_cut_head_and_tail() -> None:
    """Over 5K characters: first 1K + `[... N chars omitted ...]` + last 1K, and an event."""
    conversation = Conversation()
    conversation.start_round("go")
    _long_round(conversation, 3)
    body = "H" * 1000 + "m" * 6000 + "T" * 1000
    tool_step(conversation, tools=1, result_text=body)
    events: list[Any] = []
    strategy = SummarizeStrategy(_budget(), on_event=events.append, summary_schema=InitSummary)
    await strategy.compact(conversation, fixed_summarizer(summary_text(InitSummary)))
    result = conversation.entries[-1].step.results[0]
    assert "H" * 1000 + "\n\n[... 6000 chars omitted ...]\n\n" + "T" * 1000 == result.content
    cut = [e for e in events if isinstance(e, ToolResultTruncatedEvent)]
    assert [(result.tool_use_id, 8000, len(result.text))] == [
        (e.tool_use_id, e.original_chars, e.kept_chars) for e in cut
    ]


async def test_over_target_keeps_fewer_steps_but_never_none_and_warns() -> None:
    """Truncated and still too big: drop kept steps one by one, down to one, with a warning."""
    conversation = Conversation()
    conversation.start_round("go")
    for _ in range(3):
        tool_step(conversation, tools=3, result_chars=4900)
    events: list[Any] = []
    budget = _budget(compact_threshold=3000, context_window=6000)
    strategy = SummarizeStrategy(budget, on_event=events.append, summary_schema=InitSummary)
    record = await strategy.compact(conversation, fixed_summarizer(summary_text(InitSummary)))
    assert 1 == record.kept_steps
    assert record.warning is not None
    (warning,) = [e for e in events if isinstance(e, ContextWarningEvent)]
    assert (1, 3) == (warning.kept_steps, warning.keep_recent_steps)
    assert_valid(strategy.compose_payload(SYSTEM, TOOLS, conversation))


async def test_compaction_lands_below_threshold_minus_margin() -> None:
    """Hysteresis: the compacted context is under the target, not just under the threshold."""
    conversation = Conversation()
    conversation.start_round("go")
    _long_round(conversation, 30, result_chars=2500)
    budget = _budget()
    strategy = SummarizeStrategy(budget, summary_schema=InitSummary)
    strategy.compose_payload(SYSTEM, TOOLS, conversation)
    tool_step(conversation, tools=1, result_chars=2500, usage={"input_tokens": 25_000})
    assert True is strategy.should_compact(conversation)
    record = await strategy.compact(conversation, fixed_summarizer(summary_text(InitSummary)))
    assert record.tokens_after < budget.target_tokens < budget.compact_threshold
    assert record.tokens_after == conversation.context_tokens


async def test_no_second_compaction_without_a_new_step() -> None:
    """Even still over threshold, a compaction waits for the next step (no death spiral)."""
    conversation = Conversation()
    conversation.start_round("x" * 80_000)
    tool_step(conversation, tools=0, text="ok")
    strategy = SummarizeStrategy(_budget(), summary_schema=InitSummary)
    assert True is strategy.should_compact(conversation)
    record = await strategy.compact(conversation, fixed_summarizer(summary_text(InitSummary)))
    assert record.tokens_after > _budget().compact_threshold
    assert False is strategy.should_compact(conversation)
    conversation.start_round("more")
    tool_step(conversation, tools=0, text="ok")
    assert True is strategy.should_compact(conversation)


async def test_compacted_event_carries_design_fields() -> None:
    """`context.compacted`: tokens before/after, kept steps, summary tokens, mode, latency."""
    conversation = Conversation()
    conversation.start_round("go")
    _long_round(conversation, 5)
    events: list[Any] = []
    strategy = SummarizeStrategy(_budget(), on_event=events.append, summary_schema=InitSummary)
    record = await strategy.compact(conversation, fixed_summarizer(summary_text(InitSummary)))
    (event,) = [e for e in events if isinstance(e, ContextCompactedEvent)]
    assert record.event() == event
    assert {
        "tokens_before",
        "tokens_after",
        "kept_steps",
        "summary_tokens",
        "mode",
        "latency_ms",
        "waited_ms",
        "ledger_dropped",
    } == set(event.log_fields())
    assert 0 < event.summary_tokens
    assert event.latency_ms == event.waited_ms  # asked for at the threshold: all waited


@pytest.mark.parametrize(
    "answer",
    ["not json at all", json.dumps({"key_paths": {}}), json.dumps({"analysis_conclusions": 3})],
)
async def test_invalid_summary_falls_back_to_extraction(answer: str) -> None:
    """A summary that is not JSON or misses the schema's sections is replaced, mode fallback."""
    conversation = Conversation()
    conversation.start_round("go")
    tool_step(conversation, tools=1, text="TODO: re-run sample_007", path="scenarios/a/x.json")
    _long_round(conversation, 3)
    strategy = SummarizeStrategy(_budget(), summary_schema=InitSummary)
    record = await strategy.compact(conversation, fixed_summarizer(answer))
    summary = InitSummary.model_validate_json(record.summary or "")
    assert "fallback" == record.mode
    assert record.fallback_reason
    assert "scenarios/a/x.json" in summary.key_paths.values()
    assert "re-run sample_007" in summary.pending_actions


async def test_failing_summarizer_falls_back() -> None:
    """A summarizer that raises means the fallback summary, not a failed compaction."""

    async def broken(payload: Payload) -> str:
        raise ConnectionError("overloaded")

    conversation = Conversation()
    conversation.start_round("go")
    _long_round(conversation, 4)
    strategy = SummarizeStrategy(_budget(), summary_schema=InitSummary)
    record = await strategy.compact(conversation, broken)
    assert ("fallback", 3) == (record.mode, record.kept_steps)
    assert "ConnectionError" in (record.fallback_reason or "")


@pytest.mark.parametrize("timeout", [120.0, 5.0])
async def test_hanging_summarizer_times_out_on_the_clock(timeout: float) -> None:
    """No answer within the summary timeout (fake clock, no real wait): fallback summary."""
    clock = ManualClock()
    conversation = Conversation()
    conversation.start_round("go")
    _long_round(conversation, 4)
    strategy = SummarizeStrategy(
        _budget(summary_timeout_s=timeout), summary_schema=InitSummary, clock=clock
    )
    done: list[Compaction] = []

    async def run() -> None:
        done.append(await strategy.compact(conversation, hanging_summarizer))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await wait_all_tasks_blocked()
        clock.advance(timeout - 0.5)
        await wait_all_tasks_blocked()
        assert [] == done
        clock.advance(0.5)
    (record,) = done
    assert ("fallback", timeout * 1000) == (record.mode, record.latency_ms)
    assert "timed out" in (record.fallback_reason or "")


async def test_summary_role_system_puts_the_summary_in_system() -> None:
    """`summary_role = "system"`: the summary is a system block; messages open with the round
    input."""
    conversation = Conversation()
    conversation.start_round("the task")
    _long_round(conversation, 5)
    strategy = SummarizeStrategy(_budget(summary_role="system"), summary_schema=InitSummary)
    await strategy.compact(conversation, fixed_summarizer(summary_text(InitSummary)))
    payload = strategy.compose_payload(SYSTEM, TOOLS, conversation)
    system = payload["system"]
    assert isinstance(system, list)
    assert SYSTEM == system[0]["text"]
    assert "<compact_summary>" in system[1]["text"]
    assert ["the task"] == _texts(payload["messages"][0])
    assert COMPACT_PROMPT not in json.dumps(payload["messages"], ensure_ascii=False)
    assert_valid(payload)


async def test_breakpoints_mark_prefix_summary_and_last_message() -> None:
    """cache_control on the stable prefix, the summary and the last message; at most four."""
    conversation = Conversation()
    conversation.start_round("the task")
    _long_round(conversation, 5)
    strategy = SummarizeStrategy(_budget(), summary_schema=InitSummary)
    await strategy.compact(conversation, fixed_summarizer(summary_text(InitSummary)))
    conversation.start_round("next task")
    _long_round(conversation, 4)
    payload = strategy.compose_payload(SYSTEM, TOOLS, conversation)
    marked = [
        (i, j)
        for i, m in enumerate(payload["messages"])
        for j, b in enumerate(m["content"])
        if "cache_control" in b  # type: ignore[operator]
    ]
    system = payload["system"]
    assert isinstance(system, list)
    assert "cache_control" in system[-1]
    last = len(payload["messages"]) - 1
    assert [(1, 0), (3, 0), (last, 0)] == marked  # summary, end of history, last message
    assert_valid(payload)


def test_stride_lets_the_recent_part_grow_before_the_boundary_moves() -> None:
    """With stride N the recent part holds N..2N-1 steps; between moves the payload only grows."""
    conversation = Conversation()
    conversation.start_round("go")
    strategy = SummarizeStrategy(_budget(keep_recent_steps=3), stride=3)
    previous: list[Any] = []
    sizes = []
    for _ in range(9):
        tool_step(conversation, tools=1)
        strategy.on_turn_complete(conversation)
        messages = strategy.compose_payload(SYSTEM, TOOLS, conversation)["messages"]
        sizes.append(len(conversation.entries) - strategy.boundary)
        grew = [
            {
                **m,
                "content": [
                    {k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]
                ],
            }  # type: ignore[union-attr]
            for m in messages
        ]
        if sizes[-1] > 3:
            assert previous == grew[: len(previous)]
        previous = grew
    assert [1, 2, 3, 4, 5, 3, 4, 5, 3] == sizes


async def test_a_summary_asked_for_earlier_keeps_the_steps_after_its_request_whole() -> None:
    """A ready summary (asked for in the background when the history ended at step 4) is
    used without a call; the recent N and every step after step 4 stay whole."""
    conversation = Conversation()
    conversation.start_round("go")
    _long_round(conversation, 8, result_chars=4_000)
    seen: list[Payload] = []
    strategy = SummarizeStrategy(_budget(keep_recent_steps=2), summary_schema=InitSummary)
    ready = ReadySummary(summary_text(InitSummary), through_seq=4, started=0.0, waited_ms=5.0)
    record = await strategy.compact(conversation, fixed_summarizer("unused", seen), ready=ready)
    assert [] == seen
    assert (5, 3, "llm") == (record.first_kept_seq, record.kept_steps, record.mode)
    assert 5.0 == record.event().waited_ms


async def test_a_summary_asked_for_earlier_is_dropped_when_newer_steps_no_longer_fit() -> None:
    """Steps appended since the request too big to stay whole beside it: the summary is asked
    for again, about everything, and a warning says why."""
    conversation = Conversation()
    conversation.start_round("go")
    _long_round(conversation, 2, result_chars=400)
    _long_round(conversation, 20, result_chars=4_800)  # under the cut at compaction
    seen: list[Payload] = []
    events: list[Any] = []
    strategy = SummarizeStrategy(
        _budget(keep_recent_steps=2), summary_schema=InitSummary, on_event=events.append
    )
    ready = ReadySummary(summary_text(InitSummary), through_seq=1, started=0.0)
    text = summary_text(InitSummary)
    record = await strategy.compact(conversation, fixed_summarizer(text, seen), ready=ready)
    assert 1 == len(seen)
    assert record.first_kept_seq > 2
    (warning,) = [e for e in events if isinstance(e, ContextWarningEvent)]
    assert "asked for again" in warning.reason
    assert (20, 2) == (warning.kept_steps, warning.keep_recent_steps)
