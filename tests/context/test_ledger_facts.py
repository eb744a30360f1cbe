"""Every registered fact is in every request through ten forgetful compactions, per strategy."""

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
from baton.context.events import ContextCompactedEvent
from baton.context.ledger import KeyFact, KeyFactLedger, id_facts, path_facts
from baton.context.ledger_patterns import FactPatterns, check_patterns
from baton.context.payload import Payload
from baton.context.records import Compaction
from baton.context.registry import make_strategy
from baton.context.strategy import ContextBudget, Summarizer
from baton.pipeline.summaries import ExecuteSummary

STRATEGIES = ("summarize", "sliding_window", "extract_state")
PATTERNS = FactPatterns([r"(?<![\w-])[A-Z][A-Z0-9]*_[A-Z][A-Z0-9]*_\d+(?![\w-])", r"TICKET-\d+"])


def _budget(**overrides: Any) -> ContextBudget:
    values: dict[str, Any] = {
        "context_window": 40_000,
        "compact_threshold": 8_000,
        "keep_recent_steps": 2,
        "max_output_tokens": 2_000,
    }
    return ContextBudget.model_validate({**values, **overrides})


def _shown(payload: Payload) -> str:
    return json.dumps([payload.get("system"), payload["messages"]], ensure_ascii=False)


def _forgetful() -> Summarizer:
    # A valid summary that remembers nothing of what happened.
    return fixed_summarizer(summary_text(ExecuteSummary, pending_work=["carry on"]))


def _cycle(conversation: Conversation, n: int) -> list[str]:
    """One stretch of work: a received package, a written file, a sent package, an id in a
    tool result and one in a user message; every fact registered as the agent does."""
    received = f"scenarios/leave/design/iteration_{n}/BusinessRules.md"
    written = f"scenarios/leave/tools/checker_{n}.py"
    sent = f"scenarios/leave/execution_outputs/iteration_{n}"
    sample, ticket = f"BS_MT_{n:03d}", f"TICKET-{4100 + n}"
    text = f"new work order {ticket}: apply the design at {received}"
    conversation.start_round(text)
    conversation.register_facts(
        [
            *path_facts([received], source="init_to_execute"),
            *id_facts([f"leave#{n + 1}"], source="dispatch"),
            *PATTERNS.facts([text], source="user"),
        ]
    )
    tool_step(conversation, result_text=f"{sample} failed the leave-balance checker\n" * 20)
    conversation.register_facts(PATTERNS.facts([f"{sample} failed"], source="tool"))
    tool_step(conversation, tool_name="Write", path=written, result_chars=50)
    conversation.register_paths([written], source="Write")
    tool_step(conversation, tool_name="HandoffToInit", path=sent, result_chars=50)
    conversation.register_facts(
        [*path_facts([sent], source="execute"), *id_facts([f"L1P_{n:03d}"], source="execute")]
    )
    # Steps that say nothing of the facts push them out of the recent part and the window.
    for _ in range(4):
        tool_step(conversation, text="Checking the next file.", result_chars=6_000)
    return [received, written, sent, sample, ticket, f"leave#{n + 1}", f"L1P_{n:03d}"]


async def _compact_on_time(
    strategy: Any, conversation: Conversation, summarizer: Summarizer, clock: ManualClock
) -> Compaction:
    if summarizer is not hanging_summarizer:
        result: Compaction = await strategy.compact(conversation, summarizer)
        return result
    done: list[Compaction] = []

    async def run() -> None:
        done.append(await strategy.compact(conversation, summarizer))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await wait_all_tasks_blocked()
        clock.advance(strategy.budget.summary_timeout_s)
    return done[0]


@pytest.mark.parametrize("strategy_name", STRATEGIES)
@pytest.mark.parametrize("summary", ["forgetful", "not_json", "timeout"])
async def test_every_fact_is_in_every_request_after_ten_forgetful_compactions(
    strategy_name: str, summary: str
) -> None:
    """Package paths and ids, written paths and pattern ids are in the request after each of
    ten compactions whose summary forgets everything (LLM, fallback, timed out)."""
    clock = ManualClock()
    strategy = make_strategy(strategy_name, _budget(), summary_schema=ExecuteSummary, clock=clock)
    summarizer = {
        "forgetful": _forgetful(),
        "not_json": fixed_summarizer("I forgot everything, sorry."),
        "timeout": hanging_summarizer,
    }[summary]
    conversation = Conversation()
    registered: list[str] = []
    modes = set()
    for n in range(10):
        registered += _cycle(conversation, n)
        compaction = await _compact_on_time(strategy, conversation, summarizer, clock)
        modes.add(compaction.mode)
        conversation.start_round("go on")
        tool_step(conversation, text="Reading on.", result_chars=50)
        payload = strategy.compose_payload(SYSTEM, TOOLS, conversation)
        assert_valid(payload)
        shown = _shown(payload)
        assert [] == [fact for fact in registered if fact not in shown], n
    expected_mode = "llm" if (strategy_name, summary) == ("summarize", "forgetful") else "fallback"
    assert {expected_mode} == modes


async def test_sliding_window_shows_the_ledger_once_the_steps_slid_out() -> None:
    """With no summary, sliding_window shows the ledger in its first user turn."""
    conversation = Conversation()
    conversation.start_round("go")
    conversation.register_paths(["scenarios/leave/design/BusinessRules.md"], source="handoff")
    for _ in range(6):
        tool_step(conversation, result_chars=6_000)
    strategy = make_strategy("sliding_window", _budget())
    payload = strategy.compose_payload(SYSTEM, TOOLS, conversation)
    first = payload["messages"][0]["content"][0]
    assert "user" == payload["messages"][0]["role"]
    assert "<key_facts>" in first["text"]
    assert "scenarios/leave/design/BusinessRules.md" in first["text"]


def test_past_the_cap_pattern_ids_go_first_then_ids_then_paths() -> None:
    """The cap drops pattern ids oldest first, then other ids, and paths last."""
    ledger = KeyFactLedger(
        [
            KeyFact(kind="path", value="scenarios/a/design.md"),
            *id_facts(["BS_MT_001", "BS_MT_002"], origin="pattern"),
            KeyFact(kind="id", value="leave#1"),
            KeyFact(kind="path", value="scenarios/a/notes.md"),
        ]
    )
    facts = list(ledger)
    cap = sum(f.tokens for f in facts) - 1
    assert (["scenarios/a/design.md", "BS_MT_002", "leave#1", "scenarios/a/notes.md"], 1) == (
        [f.value for f in ledger.shown(max_tokens=cap)[0]],
        ledger.shown(max_tokens=cap)[1],
    )
    paths_only = facts[0].tokens + facts[4].tokens
    kept, dropped = ledger.shown(max_tokens=paths_only)
    assert (["scenarios/a/design.md", "scenarios/a/notes.md"], 3) == (
        [f.value for f in kept],
        dropped,
    )


async def test_a_compaction_reports_the_facts_the_cap_left_out() -> None:
    """`context.compacted` counts the facts dropped by `ledger_max_tokens`; 0 when all fit."""
    each = KeyFact(kind="id", value="BS_MT_000", origin="pattern").tokens
    for cap, expected in ((2000, 0), (6 * each, 4)):
        events: list[Any] = []
        strategy = make_strategy(
            "summarize",
            _budget(ledger_max_tokens=cap),
            summary_schema=ExecuteSummary,
            on_event=events.append,
        )
        conversation = Conversation()
        conversation.start_round("go")
        conversation.register_facts(
            id_facts([f"BS_MT_{n:03d}" for n in range(10)], origin="pattern")
        )
        tool_step(conversation, result_chars=6_000)
        record = await strategy.compact(conversation, _forgetful())
        (event,) = [e for e in events if isinstance(e, ContextCompactedEvent)]
        assert (expected, expected) == (record.ledger_dropped, event.ledger_dropped)
        summary = json.loads(record.summary or "{}")
        assert 10 - expected == len(summary["key_ids"])


def test_patterns_find_ids_once_each_and_refuse_bad_regexes() -> None:
    """A pattern's group 1 (or whole match) is the id; a bad or empty-matching regex fails."""
    patterns = FactPatterns([r"TICKET-(\d+)", r"BS_MT_\d+"])
    assert ["4711", "BS_MT_007"] == patterns.find("TICKET-4711 TICKET-4711 on BS_MT_007")
    with pytest.raises(ValueError, match="not a valid regular expression"):
        check_patterns(["TICKET-("])
    with pytest.raises(ValueError, match="matches the empty string"):
        check_patterns([r"\d*"])


@pytest.mark.parametrize("strategy_name", STRATEGIES)
async def test_a_replayed_conversation_shows_the_same_facts(strategy_name: str) -> None:
    """Rebuilt from its records, a conversation with facts and compactions sends the same
    request, ledger and cap included."""
    live = make_strategy(
        strategy_name, _budget(ledger_max_tokens=120), summary_schema=ExecuteSummary
    )
    conversation = Conversation()
    records: list[Any] = []
    for n in range(3):
        records.append(conversation.start_round(f"order TICKET-{n}"))
        records.append(conversation.register_facts(PATTERNS.facts([f"TICKET-{n}"])))
        for _ in range(3):
            records.append(tool_step(conversation, result_text=f"BS_MT_{n:03d} " * 900))
            found = conversation.register_facts(PATTERNS.facts([f"BS_MT_{n:03d}"]))
            records.extend([found] if found is not None else [])
            live.compose_payload(SYSTEM, TOOLS, conversation)
        records.append(await live.compact(conversation, _forgetful()))
    expected = live.compose_payload(SYSTEM, TOOLS, conversation)
    replayed = Conversation.replay(records)
    fresh = make_strategy(
        strategy_name, _budget(ledger_max_tokens=120), summary_schema=ExecuteSummary
    )
    assert expected == fresh.compose_payload(SYSTEM, TOOLS, replayed)
    assert "TICKET-2" in _shown(expected)
