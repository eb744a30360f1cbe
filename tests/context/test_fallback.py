"""The extractive fallback summary: paths, ids and pending items, no model."""

from __future__ import annotations

import re

import pytest
from ctx_factories import tool_step
from hypothesis import given
from hypothesis import strategies as st

from baton.context.conversation import Conversation
from baton.context.errors import SummaryFailure
from baton.context.fallback import _ids, extract, fallback_summary
from baton.context.summary_format import SUMMARY_TAG, extract_json_object, summary_json
from baton.pipeline.summaries import ExecuteSummary, InitSummary


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


# The single pattern the id words were found with before; the scan that replaced it (linear
# in the text) must find the same ones.
_ONE_PATTERN = re.compile(r"\b([A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)*[_-][0-9]+[A-Za-z0-9]*)\b")


@given(st.text(alphabet="aZx19_-. é\n", max_size=60))
def test_id_words_are_the_ones_the_single_pattern_found(text: str) -> None:
    """Words joined by `_` or `-`, from a letter to a last part that starts with a digit, cut
    at word boundaries (a glued `é` included), as the one regular expression found them."""
    assert _ONE_PATTERN.findall(text) == _ids(text)


@pytest.mark.timeout(10)
def test_texts_that_made_the_patterns_backtrack_are_scanned_in_one_pass() -> None:
    """200 KB of `a-a-…` (no digit part), of `a.a.…` before a URL, of opening fences and
    summary tags: each scanned in time linear in its size (the id pattern once took 20 s for
    40 KB, the URL pattern 1.4 s), with what they hold still found."""
    found = extract(["a-" * 100_000 + " order-77", "a." * 100_000 + "x://host/p see b/c.md"])
    assert (["order-77"], ["b/c.md"]) == (found.ids, found.paths)  # the URL taken out whole
    fences = "```{" * 50_000
    tags = f"<{SUMMARY_TAG}>" * 50_000
    for text in (fences, tags):
        with pytest.raises(SummaryFailure):
            extract_json_object(text)
    assert {"a": 1} == extract_json_object(tags + '{"a": 1}' + f"</{SUMMARY_TAG}>")
