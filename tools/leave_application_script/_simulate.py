"""Plays one sample's dialogue against a mock of the evaluated agent's tools.

The result is what Execute's harness records: the conversation, every tool call with its
arguments and result, and the world state before and after. How the evaluated agent behaves
depends on the design it was given (v1 in iteration 1, v2 in iteration 2) and on the sample's
recorded failure cause, so the traces show the very behaviour the report attributes.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Literal

from tools.leave_application_script._dialogue import (
    Agent,
    Lookup,
    Recalc,
    Request,
    SampleSpec,
    Submit,
    User,
    fmt_days,
)
from tools.leave_application_script._world import (
    HOLIDAYS,
    LEAVE_TYPE_CN,
    PEOPLE,
    TODAY,
    balances_state,
    name_of,
    profile,
)

DesignVersion = Literal["v1", "v2"]
_LEVEL_NAMES = ("direct_manager", "department_head", "hrbp")


@dataclass(frozen=True)
class Behaviour:
    """How the evaluated agent and Execute's mock tools act in one iteration."""

    design_version: DesignVersion
    deduct: bool  # calls update_employee_leave_balance after creating the application
    split_years: bool  # v2: queries and deducts each calendar year separately
    invert_start_half: bool  # v1 tool spec misread: passes AM for a leave that starts PM
    notify_unknown: frozenset[str]  # approver ids missing from the notify tool's directory
    skip_approvers: frozenset[str]  # approvers the agent leaves out (user pressure)


def behaviour_for(spec: SampleSpec, iteration: int) -> Behaviour:
    """The behaviour that reproduces the sample's recorded outcome in `iteration`."""
    first = iteration == 1
    cause = spec.iter1 if first else spec.iter2
    return Behaviour(
        design_version="v1" if first else "v2",
        deduct=not (first and cause == "L1P_001"),
        split_years=not first,
        invert_start_half=first and cause == "L1P_004",
        # Iteration 1's notify_manager mock loaded its directory without E3005 (fixed in 2).
        notify_unknown=frozenset({"E3005"}) if first else frozenset(),
        skip_approvers=spec.skip_approvers,
    )


@dataclass
class Trace:
    """A finished run: conversation, tool calls, and the states before and after."""

    conversation: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    initial_state: dict[str, Any] = field(default_factory=dict)
    final_state: dict[str, Any] = field(default_factory=dict)

    @property
    def conversation_turns(self) -> int:
        """User and assistant messages."""
        return len(self.conversation)

    def agent_texts(self) -> list[str]:
        """Everything the agent said, in order."""
        return [m["content"] for m in self.conversation if m["role"] == "assistant"]


def initial_state(spec: SampleSpec) -> dict[str, Any]:
    """The world a sample starts from (its `initial_state`)."""
    ids = [spec.employee_id] + ([spec.request_for] if spec.request_for else [])
    return {
        "simulated_today": TODAY.isoformat(),
        "employees": {eid: profile(PEOPLE[eid]) for eid in ids},
        "leave_balances": {
            spec.employee_id: balances_state(spec.employee_id, drop_years=spec.missing_years)
        },
        "holiday_calendar": {day.isoformat(): name for day, name in sorted(HOLIDAYS.items())},
        "applications": [],
        "notifications": [],
    }


def _error(code: str, message: str) -> dict[str, Any]:
    return {"error": code, "message": message}


class _Tools:
    """Execute's mock implementation (Layer 2) of the tools the design lists."""

    def __init__(self, spec: SampleSpec, behaviour: Behaviour) -> None:
        self.spec = spec
        self.behaviour = behaviour
        self.state = initial_state(spec)
        self.clock = datetime(2025, 12, 15, 10, 0) + timedelta(minutes=spec.number)

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        method = getattr(self, name)
        result: dict[str, Any] = method(**args)
        return result

    def get_employee_profile(self, employee_id: str) -> dict[str, Any]:
        return dict(self.state["employees"][employee_id])

    def query_leave_balance(self, employee_id: str, leave_type: str, year: int) -> dict[str, Any]:
        record = self.state["leave_balances"][employee_id].get(str(year))
        if record is None or leave_type not in record:
            return _error("NOT_FOUND", f"未找到 {employee_id} {year} 年度 {leave_type} 余额记录")
        return {
            "employee_id": employee_id,
            "leave_type": leave_type,
            "year": year,
            "balance_days": record[leave_type],
        }

    def calculate_leave_days(self, **args: Any) -> dict[str, Any]:
        request = _request_from(args, "annual")
        by_year = request.days_by_year()
        result: dict[str, Any] = {
            "total_days": request.total,
            "workdays_counted": _count_workdays(request),
            "excluded": request.excluded(),
        }
        if self.behaviour.design_version == "v2":
            result["days_by_year"] = {str(y): d for y, d in by_year.items()}
        return result

    def create_leave_application(self, **args: Any) -> dict[str, Any]:
        request = _request_from(args, args["leave_type"])
        app = {
            "application_id": f"LA-20251215-{self.spec.number:04d}",
            "employee_id": args["employee_id"],
            "leave_type": args["leave_type"],
            "start_date": args["start_date"],
            "end_date": args["end_date"],
            "start_half": args.get("start_half"),
            "end_half": args.get("end_half"),
            "days": request.total,
            "reason": args.get("reason"),
            "status": "pending_approval",
            "created_at": self.clock.isoformat() + "+08:00",
        }
        self.state["applications"].append(app)
        return {k: app[k] for k in ("application_id", "status", "days", "created_at")}

    def update_employee_leave_balance(
        self,
        employee_id: str,
        leave_type: str,
        delta_days: float,
        application_id: str,
        year: int = TODAY.year,
    ) -> dict[str, Any]:
        record = self.state["leave_balances"][employee_id].get(str(year))
        if record is None or leave_type not in record:
            return _error("NOT_FOUND", f"未找到 {employee_id} {year} 年度 {leave_type} 余额记录")
        before = record[leave_type]
        record[leave_type] = before + delta_days
        return {
            "employee_id": employee_id,
            "leave_type": leave_type,
            "year": year,
            "application_id": application_id,
            "balance_before": before,
            "balance_after": record[leave_type],
        }

    def notify_manager(self, application_id: str, approver_id: str, level: str) -> dict[str, Any]:
        if approver_id in self.behaviour.notify_unknown:
            return _error("APPROVER_NOT_FOUND", f"审批人 {approver_id} 不在通知目录中")
        note = {
            "notification_id": f"NT-{self.spec.number:04d}-{len(self.state['notifications']) + 1}",
            "application_id": application_id,
            "approver_id": approver_id,
            "approver_name": name_of(approver_id),
            "level": level,
            "status": "sent",
        }
        self.state["notifications"].append(note)
        return dict(note)


def _request_from(args: dict[str, Any], leave_type: Any) -> Request:
    return Request(
        leave_type,
        datetime.fromisoformat(args["start_date"]).date(),
        datetime.fromisoformat(args["end_date"]).date(),
        args.get("start_half"),
        args.get("end_half"),
    )


def _count_workdays(request: Request) -> int:
    span = (request.end - request.start).days + 1
    return span - len(request.excluded())


def _dates(request: Request) -> dict[str, Any]:
    args: dict[str, Any] = {
        "start_date": request.start.isoformat(),
        "end_date": request.end.isoformat(),
    }
    if request.start_half:
        args["start_half"] = request.start_half
    if request.end_half:
        args["end_half"] = request.end_half
    return args


class _Player:
    """Turns dialogue beats into conversation messages and tool calls."""

    def __init__(self, spec: SampleSpec, behaviour: Behaviour) -> None:
        self.spec = spec
        self.behaviour = behaviour
        self.tools = _Tools(spec, behaviour)
        self.trace = Trace(initial_state=copy.deepcopy(self.tools.state))
        self.values = spec.placeholders()

    def say(
        self, role: str, text: str, calls: list[tuple[str, dict[str, Any]]] | None = None
    ) -> list[dict[str, Any]]:
        calls = calls or []
        message: dict[str, Any] = {"role": role, "content": text}
        if calls:
            message["tool_calls"] = [name for name, _ in calls]
        self.trace.conversation.append(message)
        turn = len(self.trace.conversation) - 1
        results = []
        for name, args in calls:
            result = self.tools.call(name, args)
            is_error = "error" in result
            # Results live once, in tool_calls; the conversation keeps what was said.
            self.trace.tool_calls.append(
                {
                    "name": name,
                    "arguments": args,
                    "result": result,
                    "is_error": is_error,
                    "turn": turn,
                }
            )
            results.append(result)
        return results

    def play(self) -> Trace:
        for beat in self.spec.dialogue:
            if isinstance(beat, User):
                self.say("user", beat.text)
            elif isinstance(beat, Agent):
                text = beat.text_v2 if beat.text_v2 and self.behaviour.split_years else beat.text
                self.say("assistant", text.format_map(self.values))
            elif isinstance(beat, Lookup):
                self.lookup(beat)
            elif isinstance(beat, Recalc):
                request = self.as_sent(beat.request or self.spec.request)
                calc = ("calculate_leave_days", _dates(request))
                self.say("assistant", beat.text.format_map(self.values), [calc])
            elif isinstance(beat, Submit):
                self.submit(beat)
        self.trace.final_state = copy.deepcopy(self.tools.state)
        return self.trace

    def as_sent(self, request: Request) -> Request:
        """The request as the agent passes it to tools (v1's half-day flag misread, L1P_004)."""
        if self.behaviour.invert_start_half and request.start_half == "PM":
            return replace(request, start_half="AM")
        return request

    def years(self, request: Request) -> list[int]:
        if self.behaviour.split_years and request.days_by_year():
            return sorted(request.days_by_year())
        return [request.start.year]

    def lookup(self, beat: Lookup) -> None:
        request = beat.request or self.spec.request
        eid = self.spec.employee_id
        calls: list[tuple[str, dict[str, Any]]] = [("get_employee_profile", {"employee_id": eid})]
        for year in self.years(request):
            args = {"employee_id": eid, "leave_type": request.leave_type, "year": year}
            calls.append(("query_leave_balance", args))
        for leave_type in _EXTRA_TYPES.get(self.spec.number, ()):
            args = {"employee_id": eid, "leave_type": leave_type, "year": TODAY.year}
            calls.append(("query_leave_balance", args))
        if beat.calc:
            calls.append(("calculate_leave_days", _dates(self.as_sent(request))))
        self.say("assistant", beat.text.format_map(self.values), calls)

    def submit(self, beat: Submit) -> None:
        spec, request, eid = self.spec, self.spec.request, self.spec.employee_id
        actual = self.as_sent(request)
        create_args = {"employee_id": eid, "leave_type": request.leave_type, **_dates(actual)}
        create_args["reason"] = request.reason
        (created,) = self.say(
            "assistant",
            beat.text.format_map(self.values),
            [("create_leave_application", create_args)],
        )
        app_id = created["application_id"]
        calls: list[tuple[str, dict[str, Any]]] = []
        if self.behaviour.deduct:
            calls.extend(self.deductions(actual, app_id))
        approvers = [a for a in spec.approvers() if a not in self.behaviour.skip_approvers]
        for level, approver in zip(_LEVEL_NAMES, approvers, strict=False):
            args = {"application_id": app_id, "approver_id": approver, "level": level}
            calls.append(("notify_manager", args))
        next_step = "正在扣减余额并通知审批人。" if self.behaviour.deduct else "正在通知审批人。"
        results = self.say("assistant", f"申请已创建（{app_id}），{next_step}", calls)
        self.say(
            "assistant", _confirmation(actual, created, list(zip(calls, results, strict=True)))
        )

    def deductions(self, request: Request, app_id: str) -> list[tuple[str, dict[str, Any]]]:
        base = {"employee_id": self.spec.employee_id, "leave_type": request.leave_type}
        if not self.behaviour.split_years:
            # v1's update_employee_leave_balance has no year: it always books the current year.
            args = {**base, "delta_days": -request.total, "application_id": app_id}
            return [("update_employee_leave_balance", args)]
        return [
            (
                "update_employee_leave_balance",
                {**base, "year": year, "delta_days": -days, "application_id": app_id},
            )
            for year, days in sorted(request.days_by_year().items())
        ]


# Balances of other leave types a sample's agent line quotes (006 quotes personal leave, 023
# quotes annual leave as an alternative).
_EXTRA_TYPES: dict[int, tuple[str, ...]] = {6: ("personal",), 23: ("annual",)}


def _confirmation(
    request: Request, created: dict[str, Any], outcomes: list[tuple[tuple[str, Any], Any]]
) -> str:
    type_cn = LEAVE_TYPE_CN[request.leave_type]
    parts = [
        f"已为您提交{type_cn}申请，编号 {created['application_id']}：{request.period()}，共 "
        f"{fmt_days(created['days'])} 天。"
    ]
    updates = [(a, r) for (name, a), r in outcomes if name == "update_employee_leave_balance"]
    booked = [
        f"{r['year']} 年{type_cn}扣减 {fmt_days(-a['delta_days'])} 天，剩余 "
        f"{fmt_days(round(r['balance_after'], 2))} 天"
        for a, r in updates
        if "error" not in r
    ]
    failed = [a for a, r in updates if "error" in r]
    if booked:
        parts.append("已扣减余额：" + "；".join(booked) + "。")
    for args in failed:
        parts.append(
            f"{args['year']} 年{type_cn}额度记录不存在，{fmt_days(-args['delta_days'])} "
            "天暂未扣减，请联系 HRBP 许婷补录额度后再处理这部分。"
        )
    if not updates:
        parts.append("假期余额将在审批流程完成后由系统更新。")
    notified = [(a, r) for (name, a), r in outcomes if name == "notify_manager"]
    sent = [name_of(a["approver_id"]) for a, r in notified if "error" not in r]
    lost = [name_of(a["approver_id"]) for a, r in notified if "error" in r]
    if sent:
        parts.append(f"已通知{'、'.join(sent)}审批。")
    if lost:
        names = "、".join(lost)
        parts.append(
            f"通知{names}时系统返回“审批人不在通知目录中”，请您线下告知{names}，"
            "我也会把这个问题反馈给 HR 系统管理员。"
        )
    return "".join(parts)


def play(spec: SampleSpec, iteration: int) -> Trace:
    """Run the sample's dialogue in `iteration` and return its trace."""
    return _Player(spec, behaviour_for(spec, iteration)).play()
