"""Iteration-level files and the handoff packages, computed from the sample runs.

Every count, rate and id list here is derived from the runs, never typed in, so
`failure_summary.json`, `layer1_problems_report.json` and the packages agree with the
evaluation results on disk.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any, Final

from tools.leave_application_script._evaluate import failure_type
from tools.leave_application_script._iterations import SampleRun, stamp
from tools.leave_application_script._world import SCENARIO_DIR

REPORT_TIMES: Final = {1: datetime(2026, 1, 4, 15, 30), 2: datetime(2026, 1, 5, 11, 20)}
DESIGN_PATHS: Final = {
    "unified_scenario_design_path": f"{SCENARIO_DIR}/unified_scenario_design.yaml",
    "business_rules_path": f"{SCENARIO_DIR}/BusinessRules.md",
    "format_specifications_path": f"{SCENARIO_DIR}/format_specifications.json",
}
REPORT_FILE: Final = "layer1_problems_report.json"
SUMMARY_FILE: Final = "failure_summary.json"


def rate(part: int, whole: int) -> float:
    """A fraction rounded to 4 places, as format_specifications.json asks."""
    return round(part / whole, 4)


def percent(part: int, whole: int) -> str:
    """A share as a person reads it, e.g. 37.0%."""
    return f"{100 * part / whole:.1f}%"


def failed_runs(runs: list[SampleRun]) -> list[SampleRun]:
    """The runs that failed, in ID order."""
    return [r for r in runs if not r.passed]


def _by_cause(runs: list[SampleRun], cause: str) -> list[str]:
    return [r.sample_id for r in runs if r.cause == cause]


def failure_summary(runs: list[SampleRun]) -> dict[str, Any]:
    """`failure_summary.json`."""
    iteration = runs[0].iteration
    failed = failed_runs(runs)
    causes: dict[str, list[str]] = defaultdict(list)
    checkers: dict[str, list[str]] = defaultdict(list)
    for run in failed:
        assert run.cause is not None
        causes[failure_type(run.cause)].append(run.sample_id)
        for checker in run.failed_checkers:
            checkers[checker].append(run.sample_id)
    categories: dict[str, dict[str, int]] = {
        name: {"total": 0, "passed": 0}
        for name in ("single_turn", "multi_turn", "boundary", "policy_violation")
    }
    for run in runs:
        entry = categories[run.spec.category]
        entry["total"] += 1
        entry["passed"] += run.passed
    return {
        "iteration": iteration,
        "design_version": f"v{iteration}",
        "generated_at": stamp(REPORT_TIMES[iteration]),
        "total_samples": len(runs),
        "passed_samples": len(runs) - len(failed),
        "failed_samples": len(failed),
        "success_rate": rate(len(runs) - len(failed), len(runs)),
        "failures_by_cause": dict(causes),
        "failures_by_checker": dict(checkers),
        "by_category": categories,
        "failed_sample_ids": [r.sample_id for r in failed],
    }


def _submitted(runs: list[SampleRun]) -> list[SampleRun]:
    return [r for r in runs if r.trace.final_state["applications"]]


def _deducted(run: SampleRun) -> bool:
    return any(c["name"] == "update_employee_leave_balance" for c in run.trace.tool_calls)


def _problems_iteration_1(runs: list[SampleRun]) -> list[dict[str, Any]]:
    submitted = _submitted(runs)
    skipped = [r.sample_id for r in submitted if not _deducted(r)]
    booked = len(submitted) - len(skipped)
    l1p_002 = _by_cause(runs, "L1P_002")
    l1p_003 = _by_cause(runs, "L1P_003")
    l1p_004 = _by_cause(runs, "L1P_004")
    assert skipped == _by_cause(runs, "L1P_001")
    return [
        {
            "problem_id": "L1P_001",
            "problem_type": "BusinessRule_Unclear",
            "severity": "critical",
            "title": "余额扣减时机未明确",
            "description": "BusinessRules.md v1 未说明余额必须在创建申请时同步扣减：第 5.3 "
            "条只写请假“占用”余额，第 11 条的办理流程没有扣减步骤；而 checker "
            "leave_balance_deducted 要求创建申请后余额立即减少。规则与 checker "
            "不一致，被测 Agent 的行为随之分化。",
            "affected_samples": skipped,
            "affected_count": len(skipped),
            "evidence_summary": f"Agent 实际提交申请的 {len(submitted)} 个样本中，{len(skipped)} "
            "个创建申请后未调用 update_employee_leave_balance（余额不变，"
            f"并告诉员工“余额将在审批后更新”），{booked} 个调用了；"
            f"同一设计下行为不一致。这 {len(skipped)} 个样本全部因 "
            "leave_balance_deducted 失败。",
            "typical_case_id": "BS_MT_001",
            "suggested_fix": {
                "target": "BusinessRules.md",
                "section": "## 第 11 条 办理流程",
                "modification": "在“创建请假申请”之后加入：必须立即调用 "
                "update_employee_leave_balance 按年度扣减余额（审批驳回或撤回时"
                "由系统返还），再通知审批人；并把 unified_scenario_design.yaml "
                "中该工具的描述改为同一含义。",
                "rationale": "明确业务规则，使规则、工具描述与 checker 三者一致，避免 Agent "
                "遗漏关键操作。",
            },
        },
        {
            "problem_id": "L1P_002",
            "problem_type": "Checker_Design",
            "severity": "high",
            "title": "余额 checker 容忍度过严",
            "description": "leave_balance_deducted 要求余额严格相等；"
            "带一位小数的余额（结转小时折算）与 0.5 天粒度相减时存在二进制浮点尾"
            "差，Agent 行为正确也会被判失败。",
            "affected_samples": l1p_002,
            "affected_count": len(l1p_002),
            "evidence_summary": "预期 3.1 天实际 3.0999999999999996 天（BS_MT_010）；预期 6.8 "
            "实际 6.800000000000001（BS_MT_015）；预期 6.7 实际 "
            "6.699999999999999（BS_MT_021）。三者 LLM 评判均为 pass。",
            "typical_case_id": "BS_MT_010",
            "suggested_fix": {
                "target": "unified_scenario_design.yaml",
                "section": "checkers.leave_balance_deducted",
                "modification": "将 validation_logic 改为 |实际 - 期望| ≤ 0.01 天，"
                "application_created_correctly 的 days 比较同样处理",
                "rationale": "处理浮点数精度问题；余额业务精度本就是 0.01 天。",
            },
        },
        {
            "problem_id": "L1P_003",
            "problem_type": "BusinessRule_Missing",
            "severity": "high",
            "title": "跨年请假的扣减年度未定义",
            "description": "v1 未规定跨年请假按哪个年度扣减，update_employee_leave_balance "
            "也没有 year 参数（默认记入当年）；checker "
            "却按日期所属年度分别期望扣减。",
            "affected_samples": l1p_003,
            "affected_count": len(l1p_003),
            "evidence_summary": "BS_MT_005：5 天全部记入 2025 年（8 → 3），期望 2025 年 3 天、"
            "2026 年 2 天（5 / 13）；BS_MT_020：2 天全部记入 2025 年，期望 "
            "2025、2026 年各 1 天。",
            "typical_case_id": "BS_MT_005",
            "suggested_fix": {
                "target": "BusinessRules.md",
                "section": "## 第 5 条 假期余额",
                "modification": "新增跨年规则：按每个工作日所属年度分别校验、分别扣减；"
                "update_employee_leave_balance 增加必填 year，"
                "calculate_leave_days 返回 days_by_year；"
                "并说明次年额度何时生成。",
                "rationale": "跨年是年底高频场景，规则缺失会让 Agent 与 checker 各按各的理解。",
            },
        },
        {
            "problem_id": "L1P_004",
            "problem_type": "ToolSpec_Unclear",
            "severity": "medium",
            "title": "半天标记 start_half / end_half 语义不明",
            "description": "设计只把 start_half 描述为“起始日半天标记”，未说明 AM/PM "
            "指请假从哪个半天开始还是起始日上班的半天。",
            "affected_samples": l1p_004,
            "affected_count": len(l1p_004),
            "evidence_summary": "BS_MT_012：员工“周三下午开始休”，Agent 复述为下午却传 "
            "start_half=AM，申请记成周三上午请假。",
            "typical_case_id": "BS_MT_012",
            "suggested_fix": {
                "target": "unified_scenario_design.yaml",
                "section": "tools.create_leave_application.parameters",
                "modification": "start_half 只允许 PM（13:30 开始请假），end_half 只允许 "
                "AM（12:00 结束），并在 BusinessRules 第 3 条给出示例。",
                "rationale": "消除参数歧义，使半天请假可被 checker 精确判定。",
            },
        },
    ]


def _observations_iteration_1(runs: list[SampleRun]) -> list[dict[str, Any]]:
    tool = _by_cause(runs, "L2_TOOL")
    sample = _by_cause(runs, "L3_SAMPLE")
    return [
        {
            "sample_ids": tool,
            "layer": 2,
            "note": "notify_manager 的 mock 通知目录缺少部门负责人 E3005，Execute 在 "
            "iteration_2 修复，不需要改设计。",
        },
        {
            "sample_ids": sample,
            "layer": 3,
            "note": "样本期望把 3 天事假当作超限，与第 9 条（不超过 3 天）矛盾；Execute 在 "
            "iteration_2 修正样本。",
        },
        {
            "sample_ids": ["BS_MT_025"],
            "layer": 3,
            "note": "员工要求跳过部门负责人时 Agent 照办（另有 L1P_001 的扣减问题）。规则第 7 "
            "条已要求逐级通知，可考虑在 BusinessRules 中明确“员工要求跳过审批人时不得照"
            "办”。",
        },
    ]


def _problems_iteration_2(runs: list[SampleRun]) -> list[dict[str, Any]]:
    affected = _by_cause(runs, "L3_SAMPLE")
    return [
        {
            "problem_id": "L1P_005",
            "problem_type": "TaskTemplate_Incomplete",
            "severity": "low",
            "title": "跨年样本的次年额度记录未作为样本生成约束",
            "description": "BusinessRules 5.4 与 state_schema 已说明次年额度于 12 月 1 "
            "日预生成，但 task_templates 没有要求跨年样本的 initial_state "
            "包含次年记录；BS_MT_020 的 fixture 因此缺少 E1005 的 2026 年记录。",
            "affected_samples": affected,
            "affected_count": len(affected),
            "evidence_summary": "BS_MT_020：query_leave_balance(2026) 与 "
            "update_employee_leave_balance(year=2026) 均返回 NOT_FOUND，"
            "2025 年部分已正确扣减 1 天；Agent 如实告知员工。",
            "typical_case_id": "BS_MT_020",
            "suggested_fix": {
                "target": "unified_scenario_design.yaml",
                "section": "task_templates.categories[boundary]",
                "modification": "增加 fixture_constraint：跨年样本的 initial_state "
                "必须包含请假涉及的每个年度的余额记录（规则 5.4）",
                "rationale": "把规则 5.4 落到样本生成上，避免 fixture 与规则不一致；Execute "
                "已在下一轮补齐 BS_MT_020 的记录。",
            },
        }
    ]


def _priority(problems: list[dict[str, Any]], total: int) -> list[dict[str, Any]]:
    return [
        {
            "priority": index,
            "problem_id": p["problem_id"],
            "impact": f"解决{p['affected_count']}个失败case",
            "estimated_improvement": f"+{round(100 * p['affected_count'] / total)}%",
        }
        for index, p in enumerate(problems, start=1)
    ]


def critical_affected(report: dict[str, Any]) -> int:
    """How many samples critical Layer-1 problems affect."""
    problems = report["layer1_problems"]
    critical = [p for p in problems if p["severity"] == "critical"]
    return len({sample for p in critical for sample in p["affected_samples"]})


def layer1_report(runs: list[SampleRun]) -> dict[str, Any]:
    """`layer1_problems_report.json`: the model's fields plus context for the reader."""
    iteration = runs[0].iteration
    failed = failed_runs(runs)
    problems = _problems_iteration_1(runs) if iteration == 1 else _problems_iteration_2(runs)
    report: dict[str, Any] = {
        "report_version": "1.0",
        "generated_at": stamp(REPORT_TIMES[iteration]),
        "iteration": iteration,
        "design_version": f"v{iteration}",
        "total_samples": len(runs),
        "failed_samples": len(failed),
        "failure_rate": rate(len(failed), len(runs)),
        "layer1_problems": problems,
        "modification_priority": _priority(problems, len(runs)),
    }
    report["critical_affected_share"] = rate(critical_affected(report), len(runs))
    if iteration == 1:
        report["other_observations"] = _observations_iteration_1(runs)
    else:
        report["resolved_problems"] = _resolved(runs)
    return report


def _resolved(runs: list[SampleRun]) -> list[dict[str, str]]:
    submits = [r for r in runs if r.spec.expected_action(2) == "submit"]
    booked = sum(_deducted(r) for r in submits)
    return [
        {
            "problem_id": "L1P_001",
            "status": "resolved",
            "verification": f"{len(submits)} 个提交类样本中 {booked} 个在创建申请后立即调用 "
            "update_employee_leave_balance",
        },
        {
            "problem_id": "L1P_002",
            "status": "resolved",
            "verification": "BS_MT_010 / 015 / 021 在 0.01 天容差下通过",
        },
        {
            "problem_id": "L1P_003",
            "status": "resolved",
            "verification": "BS_MT_005 按年度分别扣减（2025 年 3 天、2026 年 2 天）并通过；"
            "BS_MT_020 的分年扣减逻辑正确，失败原因见 L1P_005",
        },
        {
            "problem_id": "L1P_004",
            "status": "resolved",
            "verification": "BS_MT_012 以 start_half=PM 提交，application_created_correctly 通过",
        },
    ]
