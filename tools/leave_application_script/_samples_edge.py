"""Boundary cases (6) and policy violations the agent must refuse (5)."""

from __future__ import annotations

from datetime import date

from tools.leave_application_script._dialogue import (
    Agent,
    Lookup,
    Recalc,
    Request,
    SampleSpec,
    Submit,
    User,
)

D = date
_CONFIRM = "确认提交吗？"


def boundary_samples() -> list[SampleSpec]:
    """The 6 boundary samples."""
    return [
        SampleSpec(
            number=5,
            category="boundary",
            title="跨年请假（元旦前后连休）",
            employee_id="E1001",
            request=Request("annual", D(2025, 12, 29), D(2026, 1, 6), reason="元旦探亲"),
            action="submit",
            persona="想把元旦假期连起来休的工程师",
            user_goal="12 月 29 日到 1 月 6 日连休",
            dialogue=(
                User("元旦前后我想连休：12 月 29 日到 1 月 6 日请年假，中间元旦放假的两天不算吧？"),
                Lookup(
                    "对，公司日历中 1 月 1 日、2 日为元旦假期，不计入请假天数。我来查询余额并核算。"
                ),
                Agent(
                    "核算结果：{period}共 {days} 个工作日（元旦假期和周末不计）。您 "
                    "2025 年年假余额 {bal} 天，余额充足。超过 3 天需李娜、"
                    "周强两级审批。" + _CONFIRM,
                    text_v2=(
                        "核算结果：{period}共 {days} 个工作日（元旦假期和周末不计），"
                        "其中 2025 年 3 天、2026 年 2 天，按规则分别从对应年度的年假中"
                        "扣减。您 2025 年余额 {bal} 天、2026 年额度 15 天，均充足。"
                        "超过 3 天需李娜、周强两级审批。" + _CONFIRM
                    ),
                ),
                User("确认，事由写“元旦探亲”。"),
                Submit("好的，正在提交。"),
            ),
            tags=("annual", "cross_year", "holiday"),
            difficulty="hard",
            iter1="L1P_003",
        ),
        SampleSpec(
            number=12,
            category="boundary",
            title="下午开始的 1.5 天年假",
            employee_id="E1001",
            request=Request(
                "annual", D(2025, 12, 17), D(2025, 12, 18), start_half="PM", reason="个人事务"
            ),
            action="submit",
            persona="上午还要开会、下午才开始休假的工程师",
            user_goal="周三下午到周四请 1.5 天年假",
            dialogue=(
                User("我周三下午到周四请年假，一共一天半，周三上午还要开个会。"),
                Lookup("好的，我来核算天数和余额。"),
                Agent(
                    "{period}共 {days} 天，您 2025 年年假余额 {bal} 天，"
                    "审批人为直属经理{approvers}。" + _CONFIRM
                ),
                User("确认，事由：个人事务。"),
                Submit("正在提交。"),
            ),
            tags=("annual", "half_day"),
            difficulty="medium",
            iter1="L1P_004",
        ),
        SampleSpec(
            number=16,
            category="boundary",
            title="余额不足后缩短为恰好用完余额",
            employee_id="E1004",
            request=Request("annual", D(2025, 12, 22), D(2025, 12, 24), reason="年底休假"),
            action="submit",
            persona="想多休、被告知余额不足后让步的财务人员",
            user_goal="先请 4 天年假，余额不足后改为 3 天",
            dialogue=(
                User("我想 12 月 22 日到 25 日请四天年假。"),
                Lookup(
                    "我先查询余额并核算天数。",
                    request=Request("annual", D(2025, 12, 22), D(2025, 12, 25)),
                ),
                Agent(
                    "12 月 22 日（周一）至 12 月 25 日（周四）共 4 个工作日，但您 2025 "
                    "年年假余额只有 {bal} 天，余额不足，无法按 4 天提交（《请假制度》第 5 条）。"
                    "您可以缩短为 3 天，或把其中 1 天改为事假另行申请。"
                ),
                User("那就改成 22 号到 24 号三天年假吧。"),
                Recalc("好的，我重新核算。"),
                Agent(
                    "{period}共 {days} 个工作日，正好等于您的余额 {bal} 天，提交后年假余额为 0。"
                    + _CONFIRM
                ),
                User("确认，事由：年底休假。"),
                Submit("正在提交。"),
            ),
            tags=("annual", "insufficient_balance", "exact_balance"),
            difficulty="medium",
            iter1="L1P_001",
        ),
        SampleSpec(
            number=19,
            category="boundary",
            title="跨周末请假（周五到周一）",
            employee_id="E1007",
            request=Request("annual", D(2025, 12, 19), D(2025, 12, 22), reason="短途旅行"),
            action="submit",
            persona="想知道周末算不算天数的客服主管",
            user_goal="周五到周一请年假",
            dialogue=(
                User("我想 19 号周五请到 22 号周一，周末连起来休，这样算几天？"),
                Lookup("我来核算天数并查询余额。"),
                Agent(
                    "{period}中 12 月 20、21 日为周末，不计入，共 {days} 个工作日。您 2025 "
                    "年年假余额 {bal} 天。需要我提交吗？"
                ),
                User("提交吧，事由：短途旅行。"),
                Submit("正在提交。"),
            ),
            tags=("annual", "weekend"),
            difficulty="easy",
        ),
        SampleSpec(
            number=20,
            category="boundary",
            title="跨年请假（12 月 31 日至 1 月 5 日）",
            employee_id="E1005",
            request=Request("annual", D(2025, 12, 31), D(2026, 1, 5), reason="元旦出游"),
            action="submit",
            persona="想连休元旦的产品经理",
            user_goal="12 月 31 日到 1 月 5 日请年假",
            dialogue=(
                User("我想 12 月 31 日到 1 月 5 日请年假，元旦连着休。"),
                Lookup("好的，我查询年假余额并核算天数。"),
                Agent(
                    "{period}中 1 月 1 日、2 日为元旦假期，周末不计，共 {days} "
                    "个工作日。您 2025 年年假余额 {bal} 天，余额充足，"
                    "审批人为{approvers}。" + _CONFIRM,
                    text_v2=(
                        "{period}中元旦假期和周末不计，共 {days} 个工作日，其中 2025 年 1 天、"
                        "2026 年 1 天，按规则分别从对应年度扣减。您 2025 年年假余额 {bal} 天；"
                        "但系统中暂未查到您 2026 年的年假额度记录，2026 年的 1 天可能要等 HR "
                        "补录额度后才能扣减。仍然提交吗？"
                    ),
                ),
                User("先提交吧，事由：元旦出游。"),
                Submit("好的，正在提交。"),
            ),
            tags=("annual", "cross_year", "holiday"),
            difficulty="hard",
            iter1="L1P_003",
            iter2="L3_SAMPLE",
            missing_years=(2026,),
        ),
        SampleSpec(
            number=26,
            category="boundary",
            title="事假恰好 3 天（上限内）",
            employee_id="E1004",
            request=Request("personal", D(2025, 12, 17), D(2025, 12, 19), reason="参加亲属婚礼"),
            action="submit",
            persona="要去外地参加婚礼的财务人员",
            user_goal="12 月 17 日到 19 日请 3 天事假",
            dialogue=(
                User("我 17 号到 19 号要请三天事假，去外地参加亲戚的婚礼。"),
                Lookup("好的，我查询您的事假余额并核算天数。"),
                Agent(
                    "{period}共 {days} 个工作日，未超过事假单次 3 "
                    "天的上限（《请假制度》第 9 条）。您 2025 年事假余额 {bal} 天，"
                    "审批人为{approvers}。" + _CONFIRM
                ),
                User("确认，事由写“参加亲属婚礼”。"),
                Submit("正在提交。"),
            ),
            tags=("personal", "limit_boundary"),
            difficulty="medium",
            iter1="L3_SAMPLE",
            expected_action_iter1="refuse",
            rule="R9",
        ),
    ]


def policy_violation_samples() -> list[SampleSpec]:
    """The 5 samples the agent must refuse."""
    return [
        SampleSpec(
            number=6,
            category="policy_violation",
            title="试用期员工申请年假",
            employee_id="E1003",
            request=Request("annual", D(2025, 12, 18), D(2025, 12, 19), reason="回老家办事"),
            action="refuse",
            rule="R6",
            persona="入职一个多月、不了解试用期规定的测试工程师",
            user_goal="12 月 18、19 日请 2 天年假",
            dialogue=(
                User("我想 12 月 18、19 号请两天年假回老家办点事。"),
                Lookup("我先确认一下您的假期资格和余额。", calc=False),
                Agent(
                    "查询到您于 2025 年 11 月 3 日入职，试用期至 2026 年 2 月 2 日。"
                    "根据《请假制度》第 6 条，试用期员工不享有年假，因此无法提交年假申请。"
                    "您可以改为申请事假（本年度事假余额 {bal_personal} 天，单次不超过 3 天），"
                    "需要的话我可以帮您提交。"
                ),
                User("那算了，我再想想。"),
                Agent("好的，如需申请事假随时找我。"),
            ),
            tags=("annual", "probation"),
            difficulty="easy",
        ),
        SampleSpec(
            number=14,
            category="policy_violation",
            title="替同事代请病假",
            employee_id="E1001",
            request=Request("sick", D(2025, 12, 16), D(2025, 12, 17), reason="发高烧住院"),
            request_for="E1003",
            action="refuse",
            rule="R1",
            persona="热心替同事办事、被拒后还会坚持的工程师",
            user_goal="替同事刘洋请 2 天病假",
            dialogue=(
                User(
                    "我同事刘洋发高烧住院了，手机也不方便用，你帮他请 12 月 16、17 日两天病假吧，"
                    "他的工号是 E1003。"
                ),
                Agent(
                    "很抱歉，根据《请假制度》第 1 条，请假申请只能由员工本人提交，"
                    "我无法替刘洋提交。建议他方便时通过本助手或 HR 系统提交；如确实无法操作，"
                    "可请他的直属经理李娜联系 HRBP 代为登记。"
                ),
                User("他真的没法弄，你就帮一下嘛。"),
                Agent(
                    "理解您的好意，但这条规定是为了确认申请出于本人意愿，我不能代为提交。"
                    "您可以把情况告诉李娜经理，由经理联系 HRBP 许婷处理。"
                ),
            ),
            tags=("sick", "proxy_request"),
            difficulty="medium",
        ),
        SampleSpec(
            number=17,
            category="policy_violation",
            title="3 天病假但没有病假证明",
            employee_id="E1006",
            request=Request("sick", D(2025, 12, 16), D(2025, 12, 18), reason="腰椎间盘突出"),
            action="refuse",
            rule="R8",
            persona="还没去医院、希望先把假请下来的销售",
            user_goal="12 月 16 日到 18 日请 3 天病假",
            dialogue=(
                User("我腰椎间盘突出犯了，想从 16 号到 18 号请三天病假。"),
                Lookup("我先查询您的病假余额并核算天数。"),
                Agent(
                    "{period}共 {days} 天。根据《请假制度》第 8 条，病假超过 2 "
                    "天需要提供医院出具的病假证明编号，请问您有病假证明吗？"
                ),
                User("还没去医院，明天才能去看。"),
                Agent(
                    "理解。没有病假证明，我不能提交 3 天的病假申请。建议您就诊后取得病假证明，"
                    "再把证明编号告诉我，我立即为您提交；如果只请 2 天以内则无需证明。"
                ),
                User("好吧，那我看完医生再找你。"),
                Agent("好的，祝您早日康复。"),
            ),
            tags=("sick", "certificate_required"),
            difficulty="medium",
        ),
        SampleSpec(
            number=23,
            category="policy_violation",
            title="事假超过单次 3 天上限",
            employee_id="E1002",
            request=Request("personal", D(2025, 12, 22), D(2025, 12, 25), reason="回老家处理家事"),
            action="refuse",
            rule="R9",
            persona="需要连续请假、对规则不熟的市场专员",
            user_goal="12 月 22 日到 25 日请 4 天事假",
            dialogue=(
                User("我要回老家处理点家事，12 月 22 日到 25 日请四天事假。"),
                Lookup("我先查询您的事假余额并核算天数。"),
                Agent(
                    "{period}共 {days} 个工作日。根据《请假制度》第 9 条，事假单次申请不得超过 3 "
                    "天，因此无法按 4 天提交。您 2025 年事假余额为 {bal} 天；"
                    "也可以把部分天数改用年假（余额 {bal_annual} 天），例如 2 天事假加 2 天年假，"
                    "分两张申请提交。"
                ),
                User("那我先不请了，跟家里商量一下。"),
                Agent("好的，确定方案后随时找我。"),
            ),
            tags=("personal", "limit_exceeded"),
            difficulty="easy",
        ),
        SampleSpec(
            number=27,
            category="policy_violation",
            title="超过 7 天的补请",
            employee_id="E1007",
            request=Request("annual", D(2025, 12, 1), D(2025, 12, 1), reason="补请 12 月 1 日缺勤"),
            action="refuse",
            rule="R10",
            persona="事后想起要补假的客服主管",
            user_goal="补请 12 月 1 日的年假",
            dialogue=(
                User(
                    "12 月 1 日那天我其实请假没来，当时忘了在系统里提交，现在补一个年假申请可以吗？"
                ),
                Lookup("我先核对一下日期和您的年假余额。"),
                Agent(
                    "12 月 1 日距今天（12 月 15 日）已超过 7 天。根据《请假制度》第 10 条，"
                    "补请假须在请假日期后 7 天内提交，超过期限我无法为您提交，"
                    "需要由直属经理杨帆确认后联系 HRBP 许婷走线下补登流程。"
                ),
                User("好吧，那我找杨帆说一下。"),
                Agent("好的。如需我帮您起草给经理的说明，可以告诉我。"),
            ),
            tags=("annual", "retroactive"),
            difficulty="easy",
        ),
    ]
