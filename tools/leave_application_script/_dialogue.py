"""The building blocks of a sample: a leave request, dialogue beats, and a sample's spec.

A sample's dialogue is a list of beats. `User` and `Agent` are plain lines; `Lookup`,
`Recalc` and `Submit` are agent lines that also call the evaluated agent's tools (the trace
simulator in `_runs.py` fills in the calls and their results). Agent lines may hold
placeholders (`{days}`, `{bal}`, `{period}`, ...) filled from the sample's request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Literal

from tools.leave_application_script._world import (
    BALANCES,
    LEAVE_TYPE_CN,
    PEOPLE,
    Half,
    LeaveType,
    Person,
    approver_chain,
    excluded_days,
    leave_days_by_year,
    name_of,
)

Category = Literal["single_turn", "multi_turn", "boundary", "policy_violation"]
Action = Literal["submit", "refuse"]
# What made a sample fail in an iteration: a Layer-1 problem of the report, or Execute's own.
Cause = Literal["L1P_001", "L1P_002", "L1P_003", "L1P_004", "L2_TOOL", "L3_SAMPLE", "L3_AGENT"]

_WEEKDAYS = "一二三四五六日"
_HALF_CN = {"AM": "上午", "PM": "下午"}


def fmt_days(value: float) -> str:
    """A day count as a person writes it: 3, 1.5, 3.1 (never 3.0999999999999996)."""
    return f"{value:g}"


def fmt_date(day: date, *, with_year: bool = False) -> str:
    """'12 月 17 日（周三）', with the year in front when asked."""
    text = f"{day.month} 月 {day.day} 日（周{_WEEKDAYS[day.weekday()]}）"
    return f"{day.year} 年 {text}" if with_year else text


@dataclass(frozen=True)
class Request:
    """A leave request as the employee means it (the sample's ground truth)."""

    leave_type: LeaveType
    start: date
    end: date
    start_half: Half | None = None
    end_half: Half | None = None
    reason: str | None = None
    certificate_id: str | None = None

    def days_by_year(self) -> dict[int, float]:
        """Workdays per calendar year."""
        return leave_days_by_year(self.start, self.end, self.start_half, self.end_half)

    @property
    def total(self) -> float:
        """Total workdays of the request."""
        return sum(self.days_by_year().values())

    def period(self) -> str:
        """The period in words, e.g. '12 月 17 日（周三）下午至 12 月 18 日（周四）'."""
        crosses = self.start.year != self.end.year
        first = fmt_date(self.start, with_year=crosses or self.start.year != 2025)
        first += _HALF_CN.get(self.start_half or "", "")
        if self.start == self.end:
            return first + _HALF_CN.get(self.end_half or "", "")
        last = fmt_date(self.end, with_year=crosses) + _HALF_CN.get(self.end_half or "", "")
        return f"{first}至 {last}"

    def excluded(self) -> list[str]:
        """Weekends and holidays inside the request."""
        return excluded_days(self.start, self.end)


@dataclass(frozen=True)
class User:
    """A line of the simulated employee."""

    text: str


@dataclass(frozen=True)
class Agent:
    """A line of the evaluated agent; `text_v2` replaces it when run on design v2."""

    text: str
    text_v2: str | None = None


@dataclass(frozen=True)
class Lookup:
    """The agent checks the employee, the balance and (if `calc`) the request's days."""

    text: str
    request: Request | None = None
    calc: bool = True


@dataclass(frozen=True)
class Recalc:
    """The agent recomputes the days of a changed request."""

    text: str
    request: Request | None = None


@dataclass(frozen=True)
class Submit:
    """The agent creates the application, deducts (if it does) and notifies the approvers."""

    text: str


Beat = User | Agent | Lookup | Recalc | Submit


@dataclass(frozen=True)
class SampleSpec:
    """One evaluation sample: who asks what, the expected outcome, and how it went.

    `iter1` / `iter2` name the cause of the sample's failure in that iteration (None: it
    passed). `expected_action_iter1` is set only where iteration 1's sample was itself wrong.
    """

    number: int
    category: Category
    title: str
    employee_id: str
    request: Request
    action: Action
    persona: str
    user_goal: str
    dialogue: tuple[Beat, ...]
    tags: tuple[str, ...]
    difficulty: Literal["easy", "medium", "hard"]
    iter1: Cause | None = None
    iter2: Cause | None = None
    rule: str | None = None
    request_for: str | None = None
    skip_approvers: frozenset[str] = field(default_factory=frozenset)
    missing_years: tuple[int, ...] = ()
    expected_action_iter1: Action | None = None

    @property
    def sample_id(self) -> str:
        return f"BS_MT_{self.number:03d}"

    @property
    def person(self) -> Person:
        return PEOPLE[self.employee_id]

    def expected_action(self, iteration: int) -> Action:
        """What the sample file of `iteration` says the agent must do."""
        if iteration == 1 and self.expected_action_iter1 is not None:
            return self.expected_action_iter1
        return self.action

    def approvers(self) -> list[str]:
        """The approver chain the rules require for the request."""
        return approver_chain(self.person, self.request.total)

    def placeholders(self) -> dict[str, str]:
        """Values for the `{...}` placeholders of the agent's lines."""
        request = self.request
        by_year = request.days_by_year()
        year = min(by_year) if by_year else request.start.year
        balances = BALANCES[self.employee_id]
        bal = balances.get(year, {}).get(request.leave_type, 0.0)
        after = bal - by_year.get(year, 0.0)
        return {
            "name": self.person.name,
            "type_cn": LEAVE_TYPE_CN[request.leave_type],
            "days": fmt_days(request.total),
            "bal": fmt_days(bal),
            "after": fmt_days(round(after, 2)),
            "bal_annual": fmt_days(balances[2025]["annual"]),
            "bal_personal": fmt_days(balances[2025]["personal"]),
            "period": request.period(),
            "approvers": "、".join(name_of(a) for a in self.approvers()),
        }
