"""Single-turn samples: the employee gives everything in one message (6 samples)."""

from __future__ import annotations

from datetime import date

from tools.leave_application_script._dialogue import (
    Agent,
    Lookup,
    Request,
    SampleSpec,
    Submit,
    User,
)

D = date


def single_turn_samples() -> list[SampleSpec]:
    """The 6 single-turn samples."""
    return [
        SampleSpec(
            number=2,
            category="single_turn",
            title="一句话提交 1 天年假",
            employee_id="E1004",
            request=Request(
                "annual", D(2025, 12, 22), D(2025, 12, 22), reason="陪孩子参加学校活动"
            ),
            action="submit",
            persona="信息一次给全、表达直接的财务人员",
            user_goal="12 月 22 日请 1 天年假",
            dialogue=(
                User("帮我提交一个年假申请：12 月 22 日周一请一天，事由：陪孩子参加学校活动。"),
                Lookup("好的，我先核对您的年假余额和请假天数。"),
                Submit(
                    "您 2025 年年假余额 {bal} 天，足够本次 {days} 天，审批人为{approvers}，"
                    "现在为您提交。"
                ),
            ),
            tags=("annual", "single_day"),
            difficulty="easy",
        ),
        SampleSpec(
            number=4,
            category="single_turn",
            title="次日 1 天病假（无需证明）",
            employee_id="E1007",
            request=Request("sick", D(2025, 12, 16), D(2025, 12, 16), reason="发烧"),
            action="submit",
            persona="身体不适、语气简短的客服主管",
            user_goal="明天请 1 天病假",
            dialogue=(
                User("我从昨晚开始发烧，明天（12 月 16 日）想请一天病假在家休息。"),
                Lookup("身体要紧。我先查询您的病假余额并核算天数。"),
                Submit(
                    "病假余额 {bal} 天；1 天病假无需病假证明（超过 2 天才需要），现在为您提交。"
                ),
                User("谢谢。"),
                Agent("好好休息，早日康复。"),
            ),
            tags=("sick", "single_day"),
            difficulty="easy",
        ),
        SampleSpec(
            number=8,
            category="single_turn",
            title="单日下午半天年假",
            employee_id="E1004",
            request=Request(
                "annual", D(2025, 12, 23), D(2025, 12, 23), start_half="PM", reason="去银行办理业务"
            ),
            action="submit",
            persona="信息完整的财务人员",
            user_goal="12 月 23 日下午请半天年假",
            dialogue=(
                User("12 月 23 日下午我要去银行办理业务，请半天年假。"),
                Lookup("好的，我核对一下余额和天数。"),
                Submit("年假余额 {bal} 天，{period}计 {days} 天，审批人为{approvers}，现在提交。"),
            ),
            tags=("annual", "half_day"),
            difficulty="easy",
            iter1="L1P_001",
        ),
        SampleSpec(
            number=9,
            category="single_turn",
            title="部门经理本人请 2 天年假",
            employee_id="E2001",
            request=Request("annual", D(2025, 12, 29), D(2025, 12, 30), reason="年底家庭安排"),
            action="submit",
            persona="自己也是审批人的研发经理，熟悉流程",
            user_goal="12 月 29、30 日请 2 天年假",
            dialogue=(
                User("我是李娜，12 月 29、30 日请两天年假，事由：年底家庭安排。审批走周总那边。"),
                Lookup("好的，我核对您的年假余额和天数。"),
                Submit(
                    "您 2025 年年假余额 {bal} 天，{period}共 {days} 个工作日，"
                    "审批人为您的直属上级{approvers}。现在提交。"
                ),
            ),
            tags=("annual", "manager_applicant"),
            difficulty="easy",
        ),
        SampleSpec(
            number=13,
            category="single_turn",
            title="连续 2 天病假（恰好不需证明）",
            employee_id="E1005",
            request=Request(
                "sick", D(2025, 12, 16), D(2025, 12, 17), reason="急性肠胃炎，遵医嘱休息"
            ),
            action="submit",
            persona="提前说明病情的产品经理",
            user_goal="12 月 16、17 日请 2 天病假",
            dialogue=(
                User("医生建议我休息两天，12 月 16、17 日请病假，病历我回头补交可以吗？"),
                Lookup("先祝您早日康复。我查询一下病假余额和天数。"),
                Submit(
                    "病假余额 {bal} 天；本次 {days} 天，不超过 2 天，无需病假证明，现在为您提交。"
                ),
            ),
            tags=("sick", "certificate_threshold"),
            difficulty="easy",
            iter1="L1P_001",
        ),
        SampleSpec(
            number=22,
            category="single_turn",
            title="经理本人 1 天事假",
            employee_id="E2001",
            request=Request("personal", D(2025, 12, 19), D(2025, 12, 19), reason="办理房产过户"),
            action="submit",
            persona="时间紧、一句话交代完的经理",
            user_goal="12 月 19 日请 1 天事假",
            dialogue=(
                User("我 12 月 19 日要去办房产过户，请一天事假。"),
                Lookup("好的，我核对事假余额和天数。"),
                Submit("事假余额 {bal} 天，本次 {days} 天，审批人为{approvers}，现在提交。"),
            ),
            tags=("personal", "manager_applicant"),
            difficulty="easy",
            iter1="L1P_001",
        ),
    ]
