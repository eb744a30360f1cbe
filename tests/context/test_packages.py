"""Handoff packages: the protocol's examples parse exactly, versions are checked, paths are
listed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from baton.pipeline.errors import InvalidPackageError, PackageVersionError
from baton.pipeline.packages import (
    ContextPackage,
    ExecuteToInitContext,
    InitToExecuteContext,
    ScenarioCompletion,
    parse_package,
)

# The handoff protocol's two example packages, verbatim (docs/handoffs.md, "Packages").
INIT_TO_EXECUTE = """
{
  "version": "2.0",
  "handoff_type": "init_to_execute",
  "timestamp": "2026-01-04T10:30:00",
  "user_requirement": "生成请假申请场景的评测样本",
  "design_artifacts": {
    "unified_scenario_design_path": "scenarios/leave_application/unified_scenario_design.yaml",
    "business_rules_path": "scenarios/leave_application/BusinessRules.md",
    "format_specifications_path": "scenarios/leave_application/format_specifications.json"
  }
}
"""

EXECUTE_TO_INIT = """
{
  "version": "2.0",
  "handoff_type": "execute_to_init",
  "timestamp": "2026-01-04T15:30:00",

  "execution_output_dir": "scenarios/leave_application/execution_outputs/iteration_12",

  "trigger_reason": "Critical问题占比35%，超过30%阈值，自动修复无效",

  "iteration_summary": {
    "total_iterations": 12,
    "final_quality": 0.67,
    "layer2_iterations": 3,
    "layer3_iterations": 8,
    "total_samples": 27,
    "failed_samples": 18
  },

  "failure_samples_index": [
    {
      "sample_id": "BS_MT_001",
      "sample_path": "samples/BS_MT_001.json",
      "trace_path": "execution_traces/BS_MT_001_trace.json",
      "evaluation_path": "evaluation_results/BS_MT_001_eval.json",
      "attribution_path": "attribution_analysis/BS_MT_001_attribution.json",
      "failure_type": "Layer1_BusinessRule",
      "conversation_turns": 8,
      "checkers_failed": ["leave_balance_deducted"],
      "priority": "high"
    },
    {
      "sample_id": "BS_MT_003",
      "sample_path": "samples/BS_MT_003.json",
      "trace_path": "execution_traces/BS_MT_003_trace.json",
      "evaluation_path": "evaluation_results/BS_MT_003_eval.json",
      "attribution_path": "attribution_analysis/BS_MT_003_attribution.json",
      "failure_type": "Layer1_BusinessRule",
      "conversation_turns": 12,
      "checkers_failed": ["leave_balance_deducted", "application_status_correct"],
      "priority": "high"
    }
  ],

  "layer1_problems_report_path": "layer1_problems_report.json",

  "modification_suggestions_summary": [
    "在BusinessRules明确添加：创建请假申请后必须调用update_employee_leave_balance扣减余额",
    "将leave_balance_deducted checker改为容忍0.01天的浮点误差",
    "在BusinessRules中明确跨年度请假的余额计算规则"
  ]
}
"""


def _sent_fields(package: ContextPackage, sent: dict[str, Any]) -> dict[str, Any]:
    return package.model_dump(include=set(sent))


def test_the_seed_init_to_execute_example_parses_exactly() -> None:
    """The protocol's Init → Execute example becomes an InitToExecuteContext holding every value."""
    sent = json.loads(INIT_TO_EXECUTE)
    package = parse_package(INIT_TO_EXECUTE)
    assert isinstance(package, InitToExecuteContext)
    assert sent == _sent_fields(package, sent)
    assert {} == package.metadata
    assert package.design_rationale is None


def test_the_seed_execute_to_init_example_parses_exactly() -> None:
    """The protocol's Execute → Init example becomes an ExecuteToInitContext holding every value."""
    sent = json.loads(EXECUTE_TO_INIT)
    package = parse_package(sent)
    assert isinstance(package, ExecuteToInitContext)
    assert sent == _sent_fields(package, sent)


def test_fields_and_optionality_are_the_seeds() -> None:
    """The packages declare the protocol's fields, its required ones required (docs/handoffs.md,
    "Packages")."""
    base = {"version", "handoff_type", "timestamp", "metadata"}
    assert base == set(ContextPackage.model_fields)
    assert base | {
        "user_requirement",
        "design_artifacts",
        "design_rationale",
        "design_iterations",
        "known_constraints",
    } == set(InitToExecuteContext.model_fields)
    assert {"timestamp", "user_requirement", "design_artifacts"} == {
        name for name, f in InitToExecuteContext.model_fields.items() if f.is_required()
    }
    assert {
        "timestamp",
        "execution_output_dir",
        "trigger_reason",
        "iteration_summary",
        "failure_samples_index",
        "layer1_problems_report_path",
        "modification_suggestions_summary",
    } == {name for name, f in ExecuteToInitContext.model_fields.items() if f.is_required()}
    assert "2.0" == InitToExecuteContext.model_fields["version"].default


def test_an_unknown_major_version_is_refused_naming_both_versions() -> None:
    """A 3.x package raises PackageVersionError whose message names 3.0 and 2.0."""
    sent = json.loads(INIT_TO_EXECUTE) | {"version": "3.0"}
    with pytest.raises(PackageVersionError) as caught:
        parse_package(sent)
    assert ("3.0", "2.0") == (caught.value.received, caught.value.supported)
    assert "'3.0'" in str(caught.value)
    assert "'2.0'" in str(caught.value)


def test_the_version_is_checked_before_the_schema() -> None:
    """A future major with a handoff type unknown here is refused for its version, not its type."""
    with pytest.raises(PackageVersionError, match=r"'4\.1'"):
        parse_package({"version": "4.1", "handoff_type": "execute_to_auditor", "timestamp": "t"})


def test_constructing_a_package_of_another_major_fails_too() -> None:
    """The version check also guards direct construction, not only parse_package."""
    with pytest.raises(PackageVersionError, match=r"'1\.0'"):
        InitToExecuteContext(
            version="1.0", timestamp="t", user_requirement="r", design_artifacts={}
        )


def test_a_newer_minor_version_is_accepted_and_extra_fields_are_kept() -> None:
    """Version 2.1 with a field this runtime does not know parses, keeping version and field."""
    sent = json.loads(INIT_TO_EXECUTE) | {"version": "2.1", "review_deadline": "2026-01-05"}
    package = parse_package(sent)
    assert "2.1" == package.version
    assert "2026-01-05" == (package.model_extra or {})["review_deadline"]


def test_an_invalid_package_names_each_bad_field() -> None:
    """A package with a missing field and a wrongly typed one lists both in its error."""
    sent = json.loads(EXECUTE_TO_INIT)
    del sent["trigger_reason"]
    sent["failure_samples_index"] = "samples/BS_MT_001.json"
    with pytest.raises(InvalidPackageError) as caught:
        parse_package(sent)
    problems = caught.value.problems
    assert 2 == len(problems)
    assert problems[0].startswith("trigger_reason: Field required")
    assert problems[1].startswith("failure_samples_index: Input should be a valid list")
    assert "execute_to_init" == caught.value.handoff_type


def test_an_unknown_handoff_type_lists_the_known_ones() -> None:
    """A handoff_type outside the union is refused with the expected values named."""
    with pytest.raises(InvalidPackageError, match="init_to_execute, execute_to_init"):
        parse_package({"handoff_type": "init_to_auditor", "timestamp": "t"})


def test_json_that_is_not_an_object_is_refused() -> None:
    """Malformed JSON and a JSON list both raise InvalidPackageError, not a bare ValueError."""
    with pytest.raises(InvalidPackageError, match="not valid JSON"):
        parse_package("{not json")
    with pytest.raises(InvalidPackageError, match="expected a JSON object"):
        parse_package("[]")


def test_init_to_execute_references_its_design_files() -> None:
    """An InitToExecuteContext lists the design artifact paths as given."""
    package = parse_package(INIT_TO_EXECUTE)
    assert [
        "scenarios/leave_application/unified_scenario_design.yaml",
        "scenarios/leave_application/BusinessRules.md",
        "scenarios/leave_application/format_specifications.json",
    ] == package.referenced_paths()


def test_execute_to_init_paths_are_resolved_under_the_output_directory() -> None:
    """Index paths and the report path are listed relative to the workspace, not the iteration."""
    package = parse_package(EXECUTE_TO_INIT)
    root = "scenarios/leave_application/execution_outputs/iteration_12"
    paths = package.referenced_paths()
    assert root == paths[0]
    assert f"{root}/samples/BS_MT_001.json" == paths[1]
    assert f"{root}/attribution_analysis/BS_MT_003_attribution.json" == paths[8]
    assert f"{root}/layer1_problems_report.json" == paths[-1]
    assert 10 == len(paths)


def test_scenario_completion_is_the_third_package() -> None:
    """A scenario_complete package parses into ScenarioCompletion and lists its reports."""
    package = parse_package(
        {
            "handoff_type": "scenario_complete",
            "timestamp": "2026-01-05T09:00:00",
            "execution_output_dir": "scenarios/leave/execution_outputs/iteration_3",
            "success_rate": 0.89,
            "iteration_summary": {"total_samples": 27, "failed_samples": 3},
            "report_paths": {"failure_summary": "failure_summary.json"},
        }
    )
    assert isinstance(package, ScenarioCompletion)
    assert [
        "scenarios/leave/execution_outputs/iteration_3",
        "scenarios/leave/execution_outputs/iteration_3/failure_summary.json",
    ] == package.referenced_paths()


def test_a_success_rate_given_as_a_percentage_is_refused() -> None:
    """success_rate is a fraction: 89 is refused with the field named."""
    with pytest.raises(InvalidPackageError, match="success_rate: Input should be less than"):
        parse_package(
            {
                "handoff_type": "scenario_complete",
                "timestamp": "t",
                "execution_output_dir": "d",
                "success_rate": 89,
                "iteration_summary": {},
                "report_paths": {},
            }
        )
