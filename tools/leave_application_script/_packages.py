"""The handoff tool inputs (packages without their timestamp) and the statistics they carry.

Execute's `return_to_init` and `complete_scenario` inputs and Init's `handoff_to_execute`
inputs, built from the sample runs and the reports so their numbers agree with the files.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Final

from tools.leave_application_script._evaluate import failure_layer, failure_type
from tools.leave_application_script._iterations import SampleRun, iteration_dir
from tools.leave_application_script._reports import (
    DESIGN_PATHS,
    REPORT_FILE,
    SUMMARY_FILE,
    critical_affected,
    failed_runs,
    layer1_report,
    percent,
    rate,
)
from tools.leave_application_script._world import REQUIREMENT, SCENARIO


def iteration_summary(runs: list[SampleRun]) -> dict[str, Any]:
    """The statistics a handoff package carries."""
    failed = failed_runs(runs)
    layers: dict[int, int] = defaultdict(int)
    for run in failed:
        assert run.cause is not None
        layers[failure_layer(run.cause)] += 1
    report = layer1_report(runs)
    return {
        "iteration": runs[0].iteration,
        "total_iterations": runs[0].iteration,
        "design_version": f"v{runs[0].iteration}",
        "total_samples": len(runs),
        "passed_samples": len(runs) - len(failed),
        "failed_samples": len(failed),
        "success_rate": rate(len(runs) - len(failed), len(runs)),
        "final_quality": rate(len(runs) - len(failed), len(runs)),
        "layer1_failed_samples": layers[1],
        "layer2_failed_samples": layers[2],
        "layer3_failed_samples": layers[3],
        "layer1_critical_share": report["critical_affected_share"],
    }


_PRIORITY: Final = {"critical": "high", "high": "high", "medium": "medium", "low": "low"}


def failure_index(runs: list[SampleRun]) -> list[dict[str, Any]]:
    """`failure_samples_index`: one entry per failed sample, paths relative to the iteration."""
    severity = {
        s: p["severity"]
        for p in layer1_report(runs)["layer1_problems"]
        for s in p["affected_samples"]
    }
    entries = []
    for run in failed_runs(runs):
        assert run.cause is not None
        entries.append(
            {
                "sample_id": run.sample_id,
                "sample_path": run.relative("sample"),
                "trace_path": run.relative("trace"),
                "evaluation_path": run.relative("evaluation"),
                "attribution_path": run.relative("attribution"),
                "failure_type": failure_type(run.cause),
                "conversation_turns": run.trace.conversation_turns,
                "checkers_failed": run.failed_checkers,
                "priority": _PRIORITY.get(severity.get(run.sample_id, "low"), "low"),
                "related_problem_id": run.cause if run.cause.startswith("L1P") else None,
            }
        )
    rank = {"high": 0, "medium": 1, "low": 2}
    return sorted(entries, key=lambda e: (rank[e["priority"]], e["sample_id"]))


def return_to_init_input(runs: list[SampleRun]) -> dict[str, Any]:
    """The `return_to_init` tool input (an `ExecuteToInitContext` without its timestamp)."""
    summary = iteration_summary(runs)
    critical, total = critical_affected(layer1_report(runs)), len(runs)
    return {
        "version": "2.0",
        "handoff_type": "execute_to_init",
        "metadata": {"scenario": SCENARIO, "iteration": 1, "design_version": "v1"},
        "execution_output_dir": iteration_dir(1),
        "trigger_reason": "Critical 问题 L1P_001（余额扣减时机未明确）影响 "
        f"{percent(critical, total)} 的样本（{critical}/{total}），超过 30% "
        f"阈值；成功率 {percent(summary['passed_samples'], total)} 低于 85%，"
        "根因在设计（Layer 1），无法在 Execute 侧修复。",
        "iteration_summary": summary,
        "failure_samples_index": failure_index(runs),
        "layer1_problems_report_path": REPORT_FILE,
        "modification_suggestions_summary": [
            "在 BusinessRules 第 11 条明确：创建请假申请后必须立即调用 "
            "update_employee_leave_balance 扣减余额（L1P_001，critical）",
            "将 leave_balance_deducted checker 改为容忍 0.01 天的浮点误差（L1P_002，high）",
            "在 BusinessRules 第 5 条明确跨年请假按日期所属年度分别扣减，并为扣减工具增加 year "
            "参数（L1P_003，high）",
            "明确 start_half / end_half 的语义并给出示例（L1P_004，medium）",
        ],
    }


def complete_scenario_input(runs: list[SampleRun]) -> dict[str, Any]:
    """The `complete_scenario` tool input (a `ScenarioCompletion` without its timestamp)."""
    summary = iteration_summary(runs)
    return {
        "version": "2.0",
        "handoff_type": "scenario_complete",
        "metadata": {"scenario": SCENARIO, "iteration": 2, "design_version": "v2"},
        "execution_output_dir": iteration_dir(2),
        "success_rate": summary["success_rate"],
        "iteration_summary": {**summary, "previous_success_rate": rate(9, 27)},
        "report_paths": {"failure_summary": SUMMARY_FILE, "layer1_problems_report": REPORT_FILE},
        "completion_summary": f"iteration_2 在设计 v2 下 {summary['passed_samples']}/27 "
        f"通过（{percent(summary['passed_samples'], 27)}），达到 85% 阈值；"
        "L1P_001–L1P_004 均已解决，无 critical 问题。",
        "known_limitations": [
            "BS_MT_020：样本 fixture 缺少 E1005 的 2026 年年假记录（Layer 3，L1P_005 low），"
            "下次生成时补齐",
            "BS_MT_025：被测 Agent 在员工施压下跳过部门负责人审批（Layer 3，Agent 行为），"
            "保留为困难样本",
        ],
    }


def handoff_to_execute_input(version: int) -> dict[str, Any]:
    """Init's `handoff_to_execute` input for design v1 or v2."""
    package: dict[str, Any] = {
        "version": "2.0",
        "handoff_type": "init_to_execute",
        "metadata": {"scenario": SCENARIO, "design_version": f"v{version}"},
        "user_requirement": REQUIREMENT,
        "design_artifacts": dict(DESIGN_PATHS),
        "known_constraints": [
            "被测 Agent 的“今天”固定为 2025-12-15（周一），公司日历见 state 的 holiday_calendar",
            "样本总数 27：单轮 6、多轮 10、边界 6、违规拒绝 5；ID 为 BS_MT_001–BS_MT_027，"
            "迭代间保持不变",
            "所有输出文件遵循 format_specifications.json；成功率阈值 85%，critical 影响占比 > "
            "30% 时返回 Init",
        ],
    }
    if version == 1:
        package["design_rationale"] = (
            "以 BusinessRules 的 12 条规则为准绳，checker 只检查 state 与 trace 中可判定的事实："
            "申请内容、余额、审批链、违规拒绝；LLM 评判补充对话质量。样本覆盖假种、半天、跨年、"
            "节假日、审批链三档与五类违规。"
        )
        return package
    package["design_rationale"] = (
        "v2 针对 iteration_1 的 layer1_problems_report：L1P_001（critical）在第 11 "
        "条把扣减放在创建申请之后立即执行，并同步工具描述；L1P_002 把余额与天数比较改为 0.01 "
        "天容差；L1P_003 新增跨年按年度拆分、次年额度 12 月 1 日预生成，扣减工具增加必填 year；"
        "L1P_004 明确半天标记语义。另据报告的观察新增第 7.3 条（员工要求跳过审批人时不得照办）。"
        "已核对 BS_MT_001 的 trace 与评测、BS_MT_010 的评测。"
    )
    package["design_iterations"] = [
        {
            "version": "v1",
            "date": "2026-01-04",
            "summary": "初版设计",
            "result": "iteration_1：9/27 通过，critical 占比 37%",
        },
        {
            "version": "v2",
            "date": "2026-01-05",
            "trigger": f"{iteration_dir(1)}/{REPORT_FILE}",
            "changes": [
                "BusinessRules.md 第 11 条：创建申请后立即按年度扣减（L1P_001）",
                "unified_scenario_design.yaml checkers：0.01 天容差（L1P_002）",
                "BusinessRules.md 第 5 条 5.3–5.5 与工具参数 year / days_by_year（L1P_003）",
                "BusinessRules.md 第 3 条与工具参数半天语义（L1P_004）",
                "BusinessRules.md 第 7.3 条：不得应员工要求跳过审批人",
            ],
        },
    ]
    return package
