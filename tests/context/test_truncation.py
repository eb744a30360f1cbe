"""Head + tail truncation of long tool results (docs/context.md, "Tool-result truncation")."""

from __future__ import annotations

from baton.context.steps import build_step
from baton.context.truncation import TruncationSpec, truncate_step, truncate_text


def test_the_cut_keeps_first_and_last_thousand_around_the_count() -> None:
    """The documented format: `prefix\\n\\n[... N chars omitted ...]\\n\\nsuffix`."""
    text = "a" * 1000 + "b" * 4001 + "c" * 1000
    assert "a" * 1000 + "\n\n[... 4001 chars omitted ...]\n\n" + "c" * 1000 == truncate_text(text)


def test_results_up_to_the_limit_are_untouched() -> None:
    """5000 characters is not over 5000."""
    text = "x" * 5000
    assert text == truncate_text(text)


def test_custom_limits() -> None:
    """Limit, head and tail are configurable."""
    assert "ab\n\n[... 7 chars omitted ...]\n\nj" == truncate_text(
        "abcdefghij", TruncationSpec(limit=5, head=2, tail=1)
    )


def test_truncate_step_cuts_only_the_chosen_results_and_reports_sizes() -> None:
    """Only results over the limit (and in `only`, when given) are cut."""
    step = build_step(
        0,
        [
            {"type": "tool_use", "id": "a", "name": "Read", "input": {}},
            {"type": "tool_use", "id": "b", "name": "Read", "input": {}},
            {"type": "tool_use", "id": "c", "name": "Read", "input": {}},
        ],
        [
            {"type": "tool_result", "tool_use_id": "a", "content": "x" * 6000},
            {
                "type": "tool_result",
                "tool_use_id": "b",
                "content": [{"type": "text", "text": "y" * 7000}],
            },
            {"type": "tool_result", "tool_use_id": "c", "content": "short"},
        ],
    )
    cut_step, cuts = truncate_step(step, TruncationSpec(), only={"b", "c"})
    assert [("b", 7000, len(cut_step.results[1].text))] == [
        (c.tool_use_id, c.original_chars, c.kept_chars) for c in cuts
    ]
    assert "x" * 6000 == cut_step.results[0].content
    assert "short" == cut_step.results[2].content
