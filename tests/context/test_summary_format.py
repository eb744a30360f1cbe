"""Summary schemas (docs/context.md, "Summary schemas"), the compact prompt, and parsing a
model's answer."""

from __future__ import annotations

import json

import pytest

from baton.context.errors import SummaryFailure
from baton.context.summary_format import (
    COMPACT_PROMPT,
    GenericSummary,
    SummaryBase,
    extract_json_object,
    parse_summary,
    render_summary,
    summary_json,
)
from baton.pipeline.summaries import (
    SUMMARY_SCHEMAS,
    ExecuteSummary,
    InitSummary,
    SchedulerSummary,
    summary_schema_for,
)

SEED_INIT = {
    "current_design_summary": {
        "unified_scenario_design": "场景设计的核心要点摘要",
        "business_rules_key_points": ["关键业务规则1", "关键业务规则2"],
        "format_specifications": "格式规范摘要",
    },
    "execute_feedback_summary": {
        "execution_output_dir": "scenarios/.../execution_outputs/iteration_12",
        "total_failure_samples": 15,
        "layer1_problems_summary": ["问题类型1：描述", "问题类型2：描述"],
    },
    "analysis_conclusions": ["已分析的样本ID和主要发现"],
    "pending_actions": ["需要继续分析的样本"],
    "key_paths": {"execution_output_dir": "...", "layer1_problems_report": "..."},
}

SEED_EXECUTE = {
    "generated_components": {
        "tools": ["tool1.py: 功能描述"],
        "checkers": ["checker1.py: 检查逻辑"],
        "samples": "已生成15个样本，覆盖3类场景",
    },
    "evaluation_progress": {
        "current_iteration": 5,
        "success_rate": "12/15 (80%)",
        "layer_status": "Layer 3完成，Layer 4进行中",
    },
    "identified_issues": {
        "layer2_problems": ["Tool A返回格式不一致"],
        "layer3_problems": ["Checker B阈值过严"],
        "fix_attempts": ["已修复Tool A，待验证"],
    },
    "pending_work": ["继续修复Checker B"],
    "key_paths": {"execution_output_dir": "scenarios/.../execution_outputs/iteration_5"},
}


def test_seed_000_examples_validate_against_their_schemas() -> None:
    """Example Init and Execute summaries are valid instances of the schemas."""
    init = InitSummary.model_validate(SEED_INIT)
    execute = ExecuteSummary.model_validate(SEED_EXECUTE)
    assert 15 == init.execute_feedback_summary.total_failure_samples
    assert 5 == execute.evaluation_progress.current_iteration
    assert ["继续修复Checker B"] == execute.pending()


@pytest.mark.parametrize("schema", list(SUMMARY_SCHEMAS.values()))
def test_every_schema_has_a_valid_empty_skeleton(schema: type[SummaryBase]) -> None:
    """Right after the first input, an empty summary is still a valid one."""
    assert [] == schema.model_validate(schema.empty()).pending()


@pytest.mark.parametrize(
    ("schema", "section"),
    [
        (InitSummary, "analysis_conclusions"),
        (ExecuteSummary, "evaluation_progress"),
        (SchedulerSummary, "scenarios"),
        (GenericSummary, "completed_milestones"),
    ],
)
def test_a_missing_section_fails_validation_naming_it(
    schema: type[SummaryBase], section: str
) -> None:
    """Top-level sections are required: a summary without one is refused, named."""
    data = schema.empty()
    del data[section]
    with pytest.raises(SummaryFailure, match=section):
        parse_summary(json.dumps(data), schema)


def test_extra_keys_are_kept() -> None:
    """A model adding a useful section loses nothing."""
    summary = parse_summary(json.dumps({**SEED_INIT, "risks": ["r1"]}), InitSummary)
    assert ["r1"] == summary.model_dump()["risks"]


@pytest.mark.parametrize(
    "wrap",
    [
        "{}",
        "基于反馈，我完成了以下分析...\n<compact_summary>{}</compact_summary>",
        "Summary:\n```json\n{}\n```\nDone.",
        "prose before {} prose after",
    ],
)
def test_the_json_object_is_found_however_the_model_wraps_it(wrap: str) -> None:
    """Bare, tagged (docs/context.md, "Compaction"), fenced, or inside prose."""
    text = wrap.replace("{}", json.dumps(SEED_EXECUTE, ensure_ascii=False))
    assert SEED_EXECUTE == extract_json_object(text)


def test_no_json_object_is_a_summary_failure() -> None:
    """Plain prose is not a summary."""
    with pytest.raises(SummaryFailure, match="no JSON object"):
        extract_json_object("I summarised everything in my head.")


def test_schema_per_agent_kind() -> None:
    """Init, Execute and Scheduler get theirs; any other agent the generic one."""
    assert (InitSummary, ExecuteSummary, SchedulerSummary, GenericSummary) == tuple(
        summary_schema_for(k) for k in ("init", "execute", "scheduler", "reviewer")
    )


def test_compact_prompt_is_seed_000_verbatim() -> None:
    """The mock user message asks for the five kinds of information, as JSON."""
    assert COMPACT_PROMPT.startswith("请对当前工作进行总结，保留以下关键信息：")
    assert "- 关键路径（execution_output_dir等）" in COMPACT_PROMPT
    assert COMPACT_PROMPT.endswith("总结格式使用JSON，确保信息完整但简洁。")


def test_summary_renders_tagged_and_compact() -> None:
    """The carried summary keeps CJK readable and is shown inside compact_summary tags."""
    text = summary_json(InitSummary.model_validate(SEED_INIT))
    assert "场景设计" in text
    assert render_summary(text).startswith("<compact_summary>\n{")
