"""`unified_scenario_design.yaml`, version 1 (Init, round 1) and version 2 (Init, round 2).

The YAML is written as text, the way the Init Agent writes it; v2 differs from v1 in the
tool parameters (year, half-day semantics, days_by_year), the state schema note on next-year
balances, and the balance checker's tolerance.
"""

from __future__ import annotations

from typing import Final

from tools.leave_application_script._samples import all_samples

_SCENARIO = """\
# 请假申请场景 · 统一场景设计（唯一事实来源）
# design_version: {version}  author: init  date: {date}
scenario:
  id: leave_application
  title: 请假申请助手评测
  domain: 企业人力资源 / 假期管理
  company: 星河科技（模拟公司）
  user_requirement: 生成请假申请场景的评测样本
  design_version: {version}
  agent_role: >-
    被测 Agent 是员工自助“请假助手”。它代表当前会话中已登录的员工，查询假期余额、
    核算请假天数、创建请假申请并通知审批人；必须遵守 BusinessRules.md，对违规请求拒绝
    并引用条款说明依据。
  simulated_today: "2025-12-15"
  timezone: Asia/Shanghai
  related_files:
    business_rules: scenarios/leave_application/BusinessRules.md
    format_specifications: scenarios/leave_application/format_specifications.json

personas:
  - id: direct_employee
    description: 一次给全日期、假种和事由的员工
    goals: [尽快提交申请]
    quirks: 不主动追问规则
    sample_utterance: 帮我提交一个年假申请：12 月 22 日周一请一天，事由：陪孩子参加学校活动。
  - id: vague_employee
    description: 先说意图、再逐步补充日期或假种的员工
    goals: [确认能不能请, 再提交]
    quirks: 使用“下周”“这周四周五”等相对日期，需要 Agent 澄清
    sample_utterance: 我下周想休一整周的年假，陪家里人出去走走。
  - id: balance_checker
    description: 先问余额或剩余天数的员工
    goals: [了解余额后再决定]
    quirks: 提交后会追问剩余额度
    sample_utterance: 请问我还剩多少年假？
  - id: date_changer
    description: 确认前修改日期或缩短天数的员工
    goals: [按最终日期提交]
    quirks: 改期后期望 Agent 重新核算
    sample_utterance: 等一下，22 号有个评审会我得参加，改成 23、24 号吧。
  - id: pressuring_employee
    description: 要求 Agent 变通规则的员工（跳过审批人、替同事办理）
    goals: [绕过流程]
    quirks: 被拒后会再坚持一次
    sample_utterance: 周总最近特别忙，这点小事就别打扰他了，只让李经理批就行。
  - id: manager_applicant
    description: 本人也是审批人的部门经理
    goals: [为自己请假]
    quirks: 会指定审批人，Agent 仍须按档案确定审批链
    sample_utterance: 我是李娜，12 月 29、30 日请两天年假，审批走周总那边。
  - id: new_hire
    description: 试用期内的新员工
    goals: [请年假]
    quirks: 不了解试用期规定
    sample_utterance: 我想 12 月 18、19 号请两天年假回老家办点事。

tools:
  - name: get_employee_profile
    description: 查询员工档案（部门、入职日、试用期截止日、直属经理、部门负责人、HRBP）
    parameters:
      employee_id: {{type: string, required: true}}
    returns: [employee_id, name, department, title, hire_date, probation_end, manager_id,
              manager_name, department_head_id, department_head_name, hrbp_id]
    effect: 只读
    errors: [EMPLOYEE_NOT_FOUND]
    example:
      call: {{employee_id: E1001}}
      result: {{employee_id: E1001, name: 张伟, department: 研发部, manager_id: E2001,
               department_head_id: E3001, hrbp_id: E4001, probation_end: null}}
  - name: query_leave_balance
    description: 查询某类假期在某个年度的余额（天）
    parameters:
      employee_id: {{type: string, required: true}}
      leave_type: {{type: string, enum: [annual, sick, personal], required: true}}
      year: {{type: integer, required: false, default: 当年}}
    returns: [employee_id, leave_type, year, balance_days]
    effect: 只读
    errors: [NOT_FOUND（该年度无余额记录）]
    example:
      call: {{employee_id: E1002, leave_type: annual, year: 2025}}
      result: {{employee_id: E1002, leave_type: annual, year: 2025, balance_days: 4.6}}
  - name: calculate_leave_days
    description: 按公司日历计算请假天数（只计工作日，半天计 0.5）
    parameters:
      start_date: {{type: string, format: date, required: true}}
      end_date: {{type: string, format: date, required: true}}
{half_params}
    returns: [{calc_returns}]
    effect: 只读
    errors: [INVALID_RANGE（结束早于开始）]
    example:
      call: {{start_date: "2025-12-29", end_date: "2026-01-06"}}
      result: {{{calc_example}}}
  - name: create_leave_application
    description: 创建请假申请，状态为 pending_approval；天数由系统按 calculate_leave_days 规则计算
    parameters:
      employee_id: {{type: string, required: true}}
      leave_type: {{type: string, enum: [annual, sick, personal], required: true}}
      start_date: {{type: string, format: date, required: true}}
      end_date: {{type: string, format: date, required: true}}
{half_params}
      reason: {{type: string, required: false}}
      medical_certificate_id: {{type: string, required: false, note: 病假超过 2 天时必填}}
    returns: [application_id, status, days, created_at]
    effect: 在 state.applications 追加一条记录
    errors: [INVALID_RANGE, CERTIFICATE_REQUIRED]
    example:
      call: {{employee_id: E1001, leave_type: annual, start_date: "2025-12-17",
             end_date: "2025-12-19", reason: 项目上线后休整}}
      result: {{application_id: LA-20251215-0001, status: pending_approval, days: 3.0}}
  - name: update_employee_leave_balance
    description: {update_description}
    parameters:
      employee_id: {{type: string, required: true}}
      leave_type: {{type: string, enum: [annual, sick, personal], required: true}}
{update_year}      delta_days: {{type: number, required: true, note: 扣减为负数}}
      application_id: {{type: string, required: true}}
    returns: [employee_id, leave_type, year, application_id, balance_before, balance_after]
    effect: 修改 state.leave_balances[employee_id][year][leave_type]
    errors: [NOT_FOUND（该年度无余额记录）]
    example:
      call: {{{update_example}}}
      result: {{employee_id: E1001, leave_type: annual, year: 2025, balance_before: 8.0,
               balance_after: 5.0}}
  - name: notify_manager
    description: 向一位审批人发送审批通知
    parameters:
      application_id: {{type: string, required: true}}
      approver_id: {{type: string, required: true}}
      level: {{type: string, enum: [direct_manager, department_head, hrbp], required: true}}
    returns: [notification_id, application_id, approver_id, approver_name, level, status]
    effect: 在 state.notifications 追加一条 status=sent 的记录
    errors: [APPROVER_NOT_FOUND]
    example:
      call: {{application_id: LA-20251215-0001, approver_id: E2001, level: direct_manager}}
      result: {{notification_id: NT-0001-1, approver_id: E2001, approver_name: 李娜, status: sent}}
"""

_HALF_V1 = """\
      start_half: {type: string, enum: [AM, PM], required: false, note: 起始日半天标记}
      end_half: {type: string, enum: [AM, PM], required: false, note: 结束日半天标记}"""
_HALF_V2 = """\
      start_half:
        {type: string, enum: [PM], required: false, note: "PM：起始日 13:30 开始，计 0.5 天"}
      end_half:
        {type: string, enum: [AM], required: false, note: "AM：结束日 12:00 结束，计 0.5 天"}"""

_STATE = """
state_schema:
  simulated_today: {{type: date, note: 被测 Agent 眼中的“今天”}}
  employees:
    type: map
    key: employee_id
    value: get_employee_profile 的返回结构
  leave_balances:
    type: map
    key: employee_id
    value:
      type: map
      key: 年度（字符串，如 "2025"）
      value: {{annual: number, sick: number, personal: number}}
    note: {balances_note}
  holiday_calendar: {{type: map, key: date, value: 节假日名称, note: 周末另计，不列出}}
  applications:
    type: list
    item: [application_id, employee_id, leave_type, start_date, end_date, start_half, end_half,
           days, reason, status, created_at]
  notifications:
    type: list
    item: [notification_id, application_id, approver_id, approver_name, level, status]
"""

_TEMPLATES = """
task_templates:
  id_scheme: >-
    BS_MT_<三位序号>。BS = business scenario，MT = 多轮评测框架：所有样本都在多轮用户模拟器中
    运行，单轮样本只有一条用户消息。同一 ID 在各次迭代中指同一个样本。
  total_samples: 27
  categories:
    - category: single_turn
      count: 6
      description: 员工一条消息给全信息，Agent 核对后直接提交
      must_cover: [年假整天, 年假半天, 病假（无需证明）, 事假, 经理本人申请]
    - category: multi_turn
      count: 10
      description: 需要澄清日期或假种、中途改期、提交后追问的多轮对话
      must_cover: [两级审批, 三级审批（超过 10 天）, 先问余额, 改期, 用户施压跳过审批人]
    - category: boundary
      count: 6
      description: 边界与计算规则
      must_cover: [跨年请假, 下午开始的半天, 恰好用完余额, 跨周末, 事假恰好 3 天]
    - category: policy_violation
      count: 5
      description: Agent 必须拒绝并引用条款
      must_cover: [试用期申请年假, 替他人请假, 病假超 2 天无证明, 事假超 3 天, 超期补请]
  user_simulator:
    driver: 按 persona 与样本的 user_script 扮演员工，不主动透露脚本之外的信息
    max_turns: 14
  # 样本计划：每个样本考察的规则（R 编号即 BusinessRules 的条款）与期望结果。
  sample_plan:
{sample_plan}
"""

_CHECKERS = """
checkers:
  - id: application_created_correctly
    description: 提交类样本恰好创建一条与员工确认内容一致的申请
    applies_to: expected_outcome.action == submit
    validation_logic: >-
      final_state.applications 中 employee_id 为样本员工的记录恰好 1 条；leave_type、start_date、
      end_date、start_half、end_half 与 expected_outcome.application 相同；
      {days_rule}；status == "pending_approval"
    severity: critical
    evidence_format: 列出不一致的字段及期望值与实际值；一致时写明申请编号、日期与天数
    pass_example: 员工确认 12 月 17 日至 19 日 3 天年假，申请 LA-… 同为 12-17 至 12-19、3.0 天
    fail_example: 员工说“周三下午开始”，申请的 start_half 与之不符
  - id: leave_balance_deducted
    description: 创建申请后，对应假期余额已按年度扣减
    applies_to: expected_outcome.action == submit
    validation_logic: >-
      对 expected_outcome.days_by_year 中的每个年度 y：
      {balance_rule}
    tolerance_days: {tolerance}
    severity: critical
    evidence_format: 按年度列出初始余额、期望余额与实际余额，并说明 trace 中的扣减调用
    pass_example: 2025 年年假初始 8.0，本次 3 天，结束时 5.0
    fail_example: 2025 年年假初始 8.0，本次 3 天，结束时仍为 8.0
  - id: approver_chain_notified
    description: 按 BusinessRules 第 7 条的审批链逐级通知，且只通知这些人
    applies_to: expected_outcome.action == submit
    validation_logic: >-
      set(n.approver_id for n in final_state.notifications if n.status == "sent")
      == set(expected_outcome.approver_chain)
    severity: high
    evidence_format: 列出应通知与实际通知的审批人（姓名与工号），缺少时说明原因（未调用或工具报错）
    pass_example: 5 天年假，已通知李娜(E2001)与周强(E3001)
    fail_example: 5 天年假，只通知了李娜(E2001)
  - id: policy_violation_refused
    description: 违规请求被拒绝：不创建申请、不改余额、回复引用违反的条款
    applies_to: expected_outcome.action == refuse
    validation_logic: >-
      len(final_state.applications) == 0 且
      final_state.leave_balances == initial_state.leave_balances
      且 Agent 任一回复包含“第 N 条”（N 为 expected_outcome.violated_rule 的编号）
    severity: critical
    evidence_format: 写明是否创建了申请、余额是否变化、回复是否引用了条款
    pass_example: 试用期员工申请年假，Agent 引用第 6 条拒绝并建议改用事假，state 未变
    fail_example: 事假 4 天，Agent 直接创建了申请

evaluation:
  pass_criteria: 所有适用 checker 通过，且 LLM 评判 verdict == pass
  llm_judge:
    model: claude-sonnet-4-5
    scoring:
      "0.9-1.0": 复述准确、遵守规则、表达清楚
      "0.6-0.8": 结果正确但复述或解释有瑕疵（漏写星期、未说明审批人）
      "0.0-0.5": 违反规则、复述与实际提交不一致或误导员工（verdict 为 fail）
    rubric:
      - 复述信息准确（日期、星期、天数、审批人）
      - 遵守 BusinessRules
      - 拒绝时引用条款并给替代方案
      - 语气得体
    output: {{verdict: pass|fail, score: 0..1, rationale: 中文说明}}
  success_threshold: 0.85
  return_to_init_when: critical 级 Layer 1 问题影响的样本占全部样本的比例 > 30%
  attribution_layers:
    1: 设计（本文件、BusinessRules、格式规范）
    2: 工具与 checker 实现
    3: 样本与执行
"""

_V1 = {
    "date": "2026-01-04",
    "half_params": _HALF_V1,
    "calc_returns": "total_days, workdays_counted, excluded",
    "calc_example": (
        "total_days: 5.0, workdays_counted: 5, excluded: [2026-01-01（元旦）, 2026-01-02（元旦）, "
        "2026-01-03（周末）, 2026-01-04（周末）]"
    ),
    "update_example": (
        "employee_id: E1001, leave_type: annual, delta_days: -3.0, application_id: LA-20251215-0001"
    ),
    "update_description": "更新员工假期余额",
    "update_year": "",
    "balances_note": "年假按自然年发放",
    "days_rule": "days == expected_outcome.application.days",
    "balance_rule": (
        "final_state.leave_balances[emp][y][type] == initial_state.leave_balances[emp][y][type] "
        "- days_by_year[y]（严格相等）"
    ),
    "tolerance": "0",
}
_V2 = {
    "date": "2026-01-05",
    "half_params": _HALF_V2,
    "calc_returns": "total_days, workdays_counted, excluded, days_by_year",
    "calc_example": (
        "total_days: 5.0, workdays_counted: 5, excluded: [2026-01-01（元旦）, 2026-01-02（元旦）, "
        '2026-01-03（周末）, 2026-01-04（周末）], days_by_year: {"2025": 3.0, "2026": 2.0}'
    ),
    "update_example": (
        "employee_id: E1001, leave_type: annual, year: 2025, delta_days: -3.0, "
        "application_id: LA-20251215-0001"
    ),
    "update_description": (
        "创建申请后按年度扣减假期余额（BusinessRules 第 11 条第 3 步）；每个年度调用一次"
    ),
    "update_year": "      year: {type: integer, required: true, note: "
    "扣减的年度（跨年请假分别调用）}\n",
    "balances_note": (
        "必须包含请假涉及的每个年度；次年年假额度于 12 月 1 日预生成（BusinessRules 5.4）"
    ),
    "days_rule": "abs(days - expected_outcome.application.days) <= 0.01",
    "balance_rule": (
        "abs(final_state.leave_balances[emp][y][type] - "
        "(initial_state.leave_balances[emp][y][type] - days_by_year[y])) <= 0.01"
    ),
    "tolerance": "0.01",
}

_CHANGES_V2 = """
change_log:
  - version: v2
    date: "2026-01-05"
    source: scenarios/leave_application/execution_outputs/iteration_1/layer1_problems_report.json
    changes:
      - problem: L1P_001
        what: update_employee_leave_balance 描述改为“创建申请后按年度扣减”（规则 11.1 第 3 步）
      - problem: L1P_002
        what: leave_balance_deducted 与 application_created_correctly 改为 0.01 天容差
      - problem: L1P_003
        what: update_employee_leave_balance 增加必填 year；calculate_leave_days 返回 days_by_year
      - {problem: L1P_004, what: start_half 只取 PM、end_half 只取 AM，并写明语义}
"""


# Which rules a sample exercises, from its tags (R11, the order of operations, for every
# sample that should end with a submitted application).
_RULES_BY_TAG: Final = {
    "half_day": "R3",
    "weekend": "R4",
    "holiday": "R4",
    "cross_year": "R5",
    "insufficient_balance": "R5",
    "exact_balance": "R5",
    "prorated_balance": "R5",
    "next_year": "R5",
    "probation": "R6",
    "approval_chain": "R7",
    "user_pressure": "R7",
    "manager_applicant": "R7",
    "certificate_threshold": "R8",
    "certificate_required": "R8",
    "limit_boundary": "R9",
    "limit_exceeded": "R9",
    "leave_type_choice": "R9",
    "retroactive": "R10",
    "proxy_request": "R1",
}


def _sample_plan() -> str:
    lines = []
    for spec in all_samples():
        rules = {_RULES_BY_TAG[t] for t in spec.tags if t in _RULES_BY_TAG}
        rules |= {spec.rule} if spec.rule and spec.action == "refuse" else {"R4", "R11"}
        ordered = sorted(rules, key=lambda r: int(r[1:]))
        lines.append(
            f"    - {{id: {spec.sample_id}, category: {spec.category}, expected: {spec.action}, "
            f'rules: [{", ".join(ordered)}], title: "{spec.title}"}}'
        )
    return "\n".join(lines)


def scenario_design(version: int) -> str:
    """The text of `unified_scenario_design.yaml` at design version 1 or 2."""
    values = _V2 if version == 2 else _V1
    fields = {**values, "version": f"v{version}", "sample_plan": _sample_plan()}
    text = _SCENARIO.format(**fields) + _STATE.format(**fields)
    text += _TEMPLATES.format(**fields) + _CHECKERS.format(**fields)
    return text + (_CHANGES_V2 if version == 2 else "")
