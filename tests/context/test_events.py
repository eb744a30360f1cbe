"""Compaction events carry the token log's fields (docs/token-log.md, "Fields") and fit its
schema."""

from __future__ import annotations

from typing import Any

from ctx_factories import fixed_summarizer, summary_text, tool_step

from baton.context.conversation import Conversation
from baton.context.events import TOKEN_LOG_EVENTS, ToolResultTruncatedEvent
from baton.context.summarize import SummarizeStrategy
from baton.pipeline.defaults import role_budget
from baton.pipeline.records import MemoryRecalled  # noqa: F401 - every record registered
from baton.pipeline.summaries import InitSummary
from baton.runtime.token_records import token_record_adapter


async def test_events_validate_as_token_log_records() -> None:
    """What the sink receives becomes a valid token-log line once ts/actor are added."""
    conversation = Conversation()
    conversation.start_round("go")
    for _ in range(4):
        tool_step(conversation, tools=1, result_chars=9000)
    events: list[Any] = []
    strategy = SummarizeStrategy(
        role_budget("init"), on_event=events.append, summary_schema=InitSummary
    )
    await strategy.compact(conversation, fixed_summarizer(summary_text(InitSummary)))
    logged = [e for e in events if e.event in TOKEN_LOG_EVENTS]
    assert ["context.tool_result_truncated"] * 3 + ["context.compacted"] == [
        e.event for e in logged
    ]
    for event in logged:
        record = token_record_adapter().validate_python(
            {
                "event": event.event,
                "ts": "2026-01-01T00:00:00Z",
                "actor": "init",
                **event.log_fields(),
            }
        )
        assert event.event == record.event


def test_truncation_event_fields() -> None:
    """`context.tool_result_truncated`: which call, characters before and after."""
    event = ToolResultTruncatedEvent(tool_use_id="toolu_1", original_chars=9000, kept_chars=2031)
    assert {"tool_use_id": "toolu_1", "original_chars": 9000, "kept_chars": 2031} == (
        event.log_fields()
    )
