"""The extractive fallback summary: paths, ids and pending items, no model."""

from __future__ import annotations

from ctx_factories import tool_step

from baton.context.conversation import Conversation
from baton.context.fallback import extract, fallback_summary
from baton.context.summary_format import ExecuteSummary, InitSummary, summary_json


def test_extraction_finds_paths_ids_and_pending_items() -> None:
    """Relative and absolute paths, file names, ids, and TODO / 待办 / checkbox lines."""
    found = extract(
        [
            "Wrote scenarios/leave/execution_outputs/iteration_3/failure_summary.json, "
            "see /srv/runs/run.log and report.md. Case TC-0042 failed; uuid "
            "123e4567-e89b-12d3-a456-426614174000.",
            "TODO: rerun sample_12\n- [ ] fix checker_b\n待办：更新设计文档\nnothing here",
            "https://example.com/a/b.json is a URL; toolu_01abc is plumbing",
        ]
    )
    assert [
        "scenarios/leave/execution_outputs/iteration_3/failure_summary.json",
        "/srv/runs/run.log",
        "report.md",
    ] == found.paths
    assert "TC-0042" in found.ids
    assert "sample_12" in found.ids
    assert "123e4567-e89b-12d3-a456-426614174000" in found.ids
    assert not any(i.startswith("toolu_") for i in found.ids)
    assert ["rerun sample_12", "fix checker_b", "更新设计文档"] == found.pending
    assert not any("example.com" in p for p in found.paths)


def test_fallback_builds_on_the_previous_summary_and_the_ledger() -> None:
    """Consecutive fallbacks accumulate; registered facts are merged; the schema validates."""
    conversation = Conversation()
    conversation.start_round("go")
    tool_step(conversation, tools=1, text="TODO: check layer 2", path="scenarios/x/tool_a.py")
    conversation.register_paths(["scenarios/x/package.json"])
    previous = ExecuteSummary.model_validate(
        {**ExecuteSummary.empty(), "pending_work": ["keep me"], "key_paths": {"old": "a/b.md"}}
    )
    conversation.apply(
        {
            "type": "compaction",
            "strategy": "summarize",
            "mode": "llm",
            "summary": summary_json(previous),
            "first_kept_seq": 0,
            "tokens_before": 1,
            "tokens_after": 1,
            "kept_steps": 1,
            "summary_tokens": 1,
            "latency_ms": 0,
        }
    )
    summary = fallback_summary(ExecuteSummary, conversation, reason="timeout")
    assert ["keep me", "check layer 2"] == summary.pending_work
    assert {"a/b.md", "scenarios/x/tool_a.py", "scenarios/x/package.json"} <= set(
        summary.key_paths.values()
    )
    assert "timeout" in summary.model_dump()["compaction_note"]


def test_an_unparsable_previous_summary_still_yields_a_valid_one() -> None:
    """A foreign previous summary is mined for facts, and the result fits the schema."""
    conversation = Conversation()
    conversation.start_round("see scenarios/y/design.md")
    summary = fallback_summary(InitSummary, conversation, reason="invalid")
    assert "scenarios/y/design.md" in summary.key_paths.values()
    assert [] == summary.analysis_conclusions
