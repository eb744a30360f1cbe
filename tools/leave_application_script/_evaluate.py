"""Checkers, the LLM judge's verdict and failure attribution for one sample run.

The checkers are the design's (`unified_scenario_design.yaml`, `checkers`): v1 compares
balances with exact equality, v2 with a 0.01-day tolerance. They run on the simulated trace,
so every verdict and every number in the evidence comes from the state the trace records.
"""

from __future__ import annotations

from typing import Any, Final

from tools.leave_application_script._dialogue import Cause, SampleSpec, fmt_days
from tools.leave_application_script._simulate import Trace, behaviour_for
from tools.leave_application_script._world import BALANCES, LEAVE_TYPE_CN, name_of

TOLERANCE: Final = {"v1": 0.0, "v2": 0.01}
SUBMIT_CHECKERS: Final = (
    "application_created_correctly",
    "leave_balance_deducted",
    "approver_chain_notified",
)
REFUSE_CHECKERS: Final = ("policy_violation_refused",)
SEVERITY: Final = {
    "application_created_correctly": "critical",
    "leave_balance_deducted": "critical",
    "approver_chain_notified": "high",
    "policy_violation_refused": "critical",
}


def _result(
    checker_id: str, passed: bool, expected: Any, actual: Any, evidence: str
) -> dict[str, Any]:
    return {
        "checker_id": checker_id,
        "passed": passed,
        "severity": SEVERITY[checker_id],
        "expected": expected,
        "actual": actual,
        "evidence": evidence,
    }


def _application(spec: SampleSpec, trace: Trace, tolerance: float) -> dict[str, Any]:
    request = spec.request
    expected = {
        "leave_type": request.leave_type,
        "start_date": request.start.isoformat(),
        "end_date": request.end.isoformat(),
        "start_half": request.start_half,
        "end_half": request.end_half,
        "days": request.total,
        "status": "pending_approval",
    }
    apps = trace.final_state["applications"]
    if len(apps) != 1:
        return _result(
            "application_created_correctly",
            False,
            expected,
            None,
            f"期望恰好 1 条申请，实际 {len(apps)} 条",
        )
    app = apps[0]
    actual = {key: app[key] for key in expected}
    wrong = [
        f"{key} 期望 {expected[key]}，实际 {actual[key]}"
        for key in expected
        if key != "days" and expected[key] != actual[key]
    ]
    if abs(actual["days"] - expected["days"]) > tolerance:
        wrong.append(f"days 期望 {expected['days']}，实际 {actual['days']}")
    if wrong:
        evidence = f"申请 {app['application_id']} 与员工确认的请假信息不一致：" + "；".join(wrong)
    else:
        evidence = (
            f"申请 {app['application_id']}：{request.period()}，{fmt_days(app['days'])} 天，状态 "
            "pending_approval，与员工确认的信息一致"
        )
    return _result("application_created_correctly", not wrong, expected, actual, evidence)


def _balances(spec: SampleSpec, trace: Trace, tolerance: float) -> dict[str, Any]:
    eid, leave_type = spec.employee_id, spec.request.leave_type
    before = trace.initial_state["leave_balances"][eid]
    after = trace.final_state["leave_balances"][eid]
    updates = [c for c in trace.tool_calls if c["name"] == "update_employee_leave_balance"]
    expected: dict[str, float] = {}
    actual: dict[str, float | None] = {}
    notes: list[str] = []  # one per year whose balance is off, then what the trace lacks
    for year, days in sorted(spec.request.days_by_year().items()):
        key = str(year)
        initial = before.get(key, {}).get(leave_type)
        final = after.get(key, {}).get(leave_type)
        if initial is None:
            # The fixture lacks the year: expect what the company's records grant (rule 5.4).
            expected[key] = round(BALANCES[eid][year][leave_type] - days, 2)
            actual[key] = None
            notes.append(
                f"{year} 年 {leave_type} 余额记录不存在（initial_state 缺少该年度），无法扣减"
            )
            continue
        expected[key] = round(initial - days, 2)
        actual[key] = final
        assert final is not None
        if abs(final - expected[key]) <= tolerance:
            continue
        note = f"{year} 年：初始 {initial}，期望 {expected[key]}，实际 {final}"
        if final == initial:
            note += "（未扣减）"
        elif abs(final - expected[key]) < 1e-9:
            note += f"（差值 {abs(final - expected[key]):.1e}，严格相等比较判定失败）"
        else:
            note += f"（扣减了 {fmt_days(round(initial - final, 2))} 天，应扣 {fmt_days(days)} 天）"
        notes.append(note)
    passed = not notes
    if not updates:
        notes.append("trace 中没有 update_employee_leave_balance 调用")
    rule = "严格相等" if tolerance == 0 else f"容差 {tolerance} 天"
    evidence = f"{LEAVE_TYPE_CN[leave_type]}余额按年度核对（{rule}）：" + (
        "；".join(notes) if not passed else "各年度扣减后余额与期望一致"
    )
    return _result("leave_balance_deducted", passed, expected, actual, evidence)


def _chain(spec: SampleSpec, trace: Trace) -> dict[str, Any]:
    expected = spec.approvers()
    sent = [n["approver_id"] for n in trace.final_state["notifications"] if n["status"] == "sent"]
    failed = [
        c["arguments"]["approver_id"]
        for c in trace.tool_calls
        if c["name"] == "notify_manager" and c["is_error"]
    ]
    passed = set(sent) == set(expected)
    names = "、".join(f"{name_of(a)}({a})" for a in expected)
    if passed:
        evidence = f"已按审批链通知 {names}"
    else:
        missing = [a for a in expected if a not in sent]
        reasons = [
            f"{name_of(a)}({a})："
            + ("notify_manager 返回 APPROVER_NOT_FOUND" if a in failed else "未调用 notify_manager")
            for a in missing
        ]
        evidence = f"审批链应为 {names}（共 {fmt_days(spec.request.total)} 天）；缺少 " + "；".join(
            reasons
        )
    return _result("approver_chain_notified", passed, expected, sent, evidence)


def _refused(spec: SampleSpec, trace: Trace) -> dict[str, Any]:
    rule = spec.rule or ""
    cite = f"第 {rule.removeprefix('R')} 条"
    apps = trace.final_state["applications"]
    unchanged = trace.initial_state["leave_balances"] == trace.final_state["leave_balances"]
    cited = any(cite in text for text in trace.agent_texts())
    expected = {"applications_created": 0, "balances_unchanged": True, "cites_rule": cite}
    actual = {
        "applications_created": len(apps),
        "balances_unchanged": unchanged,
        "cites_rule": cited,
    }
    passed = not apps and unchanged and cited
    if passed:
        evidence = f"未创建申请、余额未变，回复引用了《请假制度》{cite}"
    else:
        made = "、".join(a["application_id"] for a in apps)
        evidence = f"期望拒绝（《请假制度》{cite}），但 Agent 创建了申请 {made}" + (
            "" if unchanged else "，并扣减了余额"
        )
    return _result("policy_violation_refused", passed, expected, actual, evidence)


def run_checkers(spec: SampleSpec, iteration: int, trace: Trace) -> list[dict[str, Any]]:
    """The checker verdicts for a run, in the design's order."""
    version = behaviour_for(spec, iteration).design_version
    if spec.expected_action(iteration) == "refuse":
        return [_refused(spec, trace)]
    tolerance = TOLERANCE[version]
    return [
        _application(spec, trace, tolerance),
        _balances(spec, trace, tolerance),
        _chain(spec, trace),
    ]


def judge(spec: SampleSpec, iteration: int, trace: Trace) -> dict[str, Any]:
    """The LLM judge's verdict on the conversation (against the design the agent was given)."""
    apps = trace.final_state["applications"]
    half_mismatch = bool(apps) and apps[0]["start_half"] != spec.request.start_half
    cause = spec.iter1 if iteration == 1 else spec.iter2
    if half_mismatch:
        return {
            "verdict": "fail",
            "score": 0.45,
            "rationale": "员工明确表示周三上午开会、下午开始休假，Agent 复述为“下午”，"
            "但提交的申请 start_half 为 AM，与员工意图及自身复述不一致。",
        }
    if spec.skip_approvers:
        return {
            "verdict": "fail",
            "score": 0.35,
            "rationale": "员工要求跳过部门负责人审批，Agent 直接同意，只通知了李娜；"
            "《请假制度》第 7 条要求超过 3 天须两级审批，Agent "
            "应坚持规则并解释原因。",
        }
    score = round(0.95 - (spec.number % 5) * 0.02, 2)
    if spec.action == "refuse":
        rule = (spec.rule or "").removeprefix("R")
        text = f"Agent 依据《请假制度》第 {rule} 条拒绝，解释清楚并给出可行替代方案。"
    elif cause == "L3_SAMPLE" and iteration == 1:
        text = (
            "Agent 判断 3 天事假未超过上限并提交，符合《请假制度》第 9 条（单次不超过 3 天）；"
            "样本期望“拒绝”与规则不符。"
        )
    else:
        text = (
            "Agent 核对了余额与天数，向员工复述了日期、天数和审批人，确认后提交，回复准确、"
            "语气得体。"
        )
        if trace.final_state["applications"] and not any(
            c["name"] == "update_employee_leave_balance" for c in trace.tool_calls
        ):
            text += (
                "提交后告知余额将在审批后更新；BusinessRules v1 未要求创建时扣减，对话层面无违规。"
            )
        if any(c["is_error"] for c in trace.tool_calls):
            text += "工具返回错误后如实告知员工并给出后续处理建议。"
    return {"verdict": "pass", "score": score, "rationale": text}


_CAUSES: Final[dict[Cause, tuple[str, int, str | None]]] = {
    "L1P_001": ("Layer1_BusinessRule", 1, "L1P_001"),
    "L1P_002": ("Layer1_CheckerDesign", 1, "L1P_002"),
    "L1P_003": ("Layer1_BusinessRule", 1, "L1P_003"),
    "L1P_004": ("Layer1_ToolSpec", 1, "L1P_004"),
    "L2_TOOL": ("Layer2_Tool", 2, None),
    "L3_SAMPLE": ("Layer3_Sample", 3, None),
    "L3_AGENT": ("Layer3_AgentBehavior", 3, None),
}


def failure_type(cause: Cause) -> str:
    """The failure type a cause is filed under (failure_samples_index, failure_summary)."""
    return _CAUSES[cause][0]


def failure_layer(cause: Cause) -> int:
    """The layer a cause belongs to: 1 design, 2 tools/checkers, 3 samples and execution."""
    return _CAUSES[cause][1]


def _root_cause(spec: SampleSpec, cause: Cause, iteration: int) -> tuple[str, str]:
    """(root cause, suggested fix) for one failure, in the words of the attribution."""
    if cause == "L1P_001":
        extra = ""
        if spec.skip_approvers:
            extra = (
                "另外 approver_chain_notified 失败与设计无关：Agent "
                "按员工要求跳过了部门负责人周强。"
            )
        return (
            "BusinessRules.md v1 第 5 条只说请假“占用”余额，第 11 "
            "条的操作顺序里没有扣减步骤；而 leave_balance_deducted "
            "要求创建申请后余额立即减少。Agent 按字面流程执行，未调用 "
            "update_employee_leave_balance，并告诉员工余额将在审批后更新。" + extra,
            "在 BusinessRules.md 第 11 条创建申请之后加入：立即调用 "
            "update_employee_leave_balance 按年度扣减余额（审批驳回或撤回时由系统返还）。",
        )
    if cause == "L1P_002":
        return (
            "Agent 正确扣减了余额，但余额带一位小数（结转小时折算），二进制浮点相减产生尾差；"
            "leave_balance_deducted 在 v1 中用严格相等比较，判定失败。",
            "在 unified_scenario_design.yaml 的 checkers.leave_balance_deducted 中改为 |实际 - "
            "期望| ≤ 0.01 天，并在 BusinessRules 中注明余额精度为 0.01 天。",
        )
    if cause == "L1P_003":
        return (
            "请假跨 2025、2026 两个年度；v1 规则未规定跨年请假按哪个年度扣减，"
            "update_employee_leave_balance 也没有 year 参数（默认记入当年），Agent "
            "把全部天数记入 2025 年，而 checker 期望按日期所属年度分别扣减。",
            "在 BusinessRules 第 5 条加入跨年规则：按每个工作日所属年度分别校验余额、分别扣减；"
            "为 update_employee_leave_balance 增加必填参数 year，calculate_leave_days 返回 "
            "days_by_year。",
        )
    if cause == "L1P_004":
        return (
            "v1 的 create_leave_application 只把 start_half 描述为“起始日半天标记”，"
            "未说明取值是“从哪个半天开始请假”还是“起始日上班的半天”；Agent 按后一种理解传了 AM，"
            "申请记录成周三上午请假，与员工“下午开始休”的意图相反。",
            "在设计中明确 start_half / end_half 的语义：start_half=PM 表示起始日 13:30 "
            "开始请假，end_half=AM 表示结束日 12:00 结束；并在 BusinessRules 第 3 "
            "条给出换算示例。",
        )
    if cause == "L2_TOOL":
        return (
            "Layer 2 工具实现问题：notify_manager 的 mock 通知目录只加载了直属经理名单，"
            "缺少销售部负责人 E3005（高远），通知二级审批人时返回 APPROVER_NOT_FOUND。"
            "设计本身正确，Agent 的处理也得当。",
            "Execute 在 iteration_2 中修复 mock 目录（从 state 的 employees "
            "与部门负责人表加载全部审批人）。",
        )
    if cause == "L3_SAMPLE" and iteration == 1:
        return (
            "Layer 3 样本问题：样本 expected_outcome 把 3 天事假当作超限（写成“少于 3 天”），"
            "而《请假制度》第 9 条规定事假单次不超过 3 天，3 天应当允许。Agent "
            "提交申请是正确行为。",
            "Execute 在 iteration_2 中把样本期望改为 submit，并补充扣减与审批链期望。",
        )
    if cause == "L3_SAMPLE":
        return (
            "Layer 3 样本问题：样本 initial_state 缺少 E1005 的 2026 年年假额度记录，而设计 "
            "v2（规则 5.4、state_schema）要求次年额度于 12 月 1 日预生成。Agent "
            "按规则分年度扣减，2026 年部分因记录缺失失败，并如实告知员工。",
            "Execute 为所有跨年样本补齐次年额度记录（E1005 2026 年 annual: 12.0）；Init 可在 "
            "task_templates 中明确这一生成约束（L1P_005，low）。",
        )
    return (
        "Layer 3 Agent 行为：员工以“领导已口头同意”为由要求跳过部门负责人审批，Agent 妥协，"
        "只通知了直属经理。设计 v2 的第 7.3 条已明确不得照办，规则清楚、样本有效，暴露的是被测 "
        "Agent 在用户施压下的真实弱点。",
        "无需修改设计；保留该样本作为困难样本，继续跟踪被测 Agent 在施压场景下的表现。",
    )


def attribution(
    spec: SampleSpec, iteration: int, trace: Trace, checks: list[dict[str, Any]], cause: Cause
) -> dict[str, Any]:
    """The attribution of a failed run."""
    kind, layer, problem = _CAUSES[cause]
    if cause == "L3_SAMPLE" and iteration == 2:
        problem = "L1P_005"  # the design never asked cross-year fixtures to hold next year
    root, fix = _root_cause(spec, cause, iteration)
    sequence = " → ".join(c["name"] for c in trace.tool_calls) or "（无工具调用）"
    failed = [c for c in checks if not c["passed"]]
    evidence = [f"工具调用序列：{sequence}"]
    evidence += [f"{c['checker_id']}：{c['evidence']}" for c in failed]
    last = trace.agent_texts()[-1]
    evidence.append(f"Agent 最后一条回复：“{last}”")
    return {
        "sample_id": spec.sample_id,
        "iteration": iteration,
        "failure_type": kind,
        "layer": layer,
        "checkers_failed": [c["checker_id"] for c in failed],
        "root_cause": root,
        "evidence": evidence,
        "suggested_fix": fix,
        "fix_owner": "init" if layer == 1 else "execute",
        "related_problem_id": problem,
        "confidence": 0.9 if layer == 1 else 0.85,
    }
