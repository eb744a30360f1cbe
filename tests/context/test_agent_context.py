"""AgentContext: findings merge without loss, and the context renders as a compact brief."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from baton.pipeline.agent_context import AgentContext


def test_findings_merge_under_their_source_without_touching_the_original() -> None:
    """merge_findings nests findings under the source and returns a new context."""
    context = AgentContext(task_summary="设计请假申请场景")
    merged = context.merge_findings({"iteration": 12, "success_rate": 0.67}, source="execute")
    assert {"execute": {"iteration": 12, "success_rate": 0.67}} == merged.shared_findings
    assert {} == context.shared_findings


def test_later_findings_deepen_earlier_ones_instead_of_replacing_them() -> None:
    """Nested dicts merge key by key, lists gain only new items, scalars take the newer value."""
    context = AgentContext(
        task_summary="t",
        shared_findings={"execute": {"iteration": 1, "paths": ["a.json"], "notes": {"x": 1}}},
    )
    merged = context.merge_findings(
        {"iteration": 2, "paths": ["a.json", "b.json"], "notes": {"y": 2}}, source="execute"
    ).merge_findings({"design": "v2"}, source="init")
    assert {
        "execute": {"iteration": 2, "paths": ["a.json", "b.json"], "notes": {"x": 1, "y": 2}},
        "init": {"design": "v2"},
    } == merged.shared_findings


def test_findings_without_a_source_merge_at_the_top_level() -> None:
    """With no source, the findings' own keys are merged into shared_findings."""
    context = AgentContext(task_summary="t", shared_findings={"a": [1]})
    assert {"a": [1, 2], "b": True} == context.merge_findings({"a": [2], "b": True}).shared_findings


def test_render_shows_each_nonempty_section_compactly() -> None:
    """The rendering has the task first, one line per history entry and finding, no empty parts."""
    context = AgentContext(
        task_summary="根据反馈修改 BusinessRules.md",
        relevant_history=[{"event": "returned", "iteration": 12}],
        shared_findings={"execute": {"report": "layer1_problems_report.json"}},
        metadata={"from": "execute", "priority": "high"},
    )
    assert (
        "# Task context\n"
        "根据反馈修改 BusinessRules.md\n"
        "## Relevant history\n"
        '- {"event": "returned", "iteration": 12}\n'
        "## Shared findings\n"
        '- execute: {"report": "layer1_problems_report.json"}\n'
        "## Dispatch\n"
        "from: execute · priority: high"
    ) == context.render()
    assert "# Task context\nonly the task" == AgentContext(task_summary="only the task").render()


def test_render_cuts_a_long_value_to_head_and_tail() -> None:
    """A finding longer than the cap keeps its ends and says how much was omitted."""
    context = AgentContext(task_summary="t", shared_findings={"log": "a" * 50 + "b" * 50})
    line = context.render(max_value_chars=20).splitlines()[-1]
    assert "- log: aaaaaaaaaa[... 80 chars omitted ...]bbbbbbbbbb" == line


def test_unknown_fields_and_an_empty_task_are_refused() -> None:
    """A misspelt field or an empty task summary does not validate."""
    with pytest.raises(ValidationError, match="shared_finding"):
        AgentContext.model_validate({"task_summary": "t", "shared_finding": {}})
    with pytest.raises(ValidationError, match="task_summary"):
        AgentContext(task_summary="")
