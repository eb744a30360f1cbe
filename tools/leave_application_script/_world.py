"""The simulated company the leave_application samples run in: people, calendar, balances.

Every sample starts from a fresh copy of this world (its own `initial_state`), so the same
employee may appear in several samples. The figures are chosen on purpose: a few balances
carry one decimal (carried-over hours converted to days) so that `balance - days` shows the
binary floating-point error a checker with exact equality trips over (L1P_002).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Final, Literal

LeaveType = Literal["annual", "sick", "personal"]
Half = Literal["AM", "PM"]

SCENARIO: Final = "leave_application"
SCENARIO_DIR: Final = f"scenarios/{SCENARIO}"
REQUIREMENT: Final = "生成请假申请场景的评测样本"
TODAY: Final = date(2025, 12, 15)  # the evaluated agent's "today" in every sample (a Monday)
COMPANY: Final = "星河科技"
HRBP_ID: Final = "E4001"

LEAVE_TYPE_CN: Final[dict[str, str]] = {"annual": "年假", "sick": "病假", "personal": "事假"}

# The company calendar the samples use (weekends are always off; no make-up workdays).
HOLIDAYS: Final[dict[date, str]] = {
    date(2026, 1, 1): "元旦",
    date(2026, 1, 2): "元旦",
    **{date(2026, 2, 16) + timedelta(days=i): "春节" for i in range(5)},
}


@dataclass(frozen=True)
class Person:
    """An employee record as `get_employee_profile` returns it."""

    employee_id: str
    name: str
    department: str
    title: str
    hire_date: date
    manager_id: str
    head_id: str
    probation_end: date | None = None


_PEOPLE: Final = (
    Person("E1001", "张伟", "研发部", "高级后端工程师", date(2019, 3, 1), "E2001", "E3001"),
    Person(
        "E1002",
        "王芳",
        "市场部",
        "市场专员",
        date(2025, 6, 16),
        "E2002",
        "E3002",
        date(2025, 9, 15),
    ),
    Person(
        "E1003",
        "刘洋",
        "研发部",
        "测试工程师",
        date(2025, 11, 3),
        "E2001",
        "E3001",
        date(2026, 2, 2),
    ),
    Person("E1004", "赵静", "财务部", "会计", date(2016, 7, 1), "E2003", "E3003"),
    Person("E1005", "孙悦", "产品部", "产品经理", date(2021, 4, 12), "E2004", "E3004"),
    Person("E1006", "黄磊", "销售部", "大客户经理", date(2022, 9, 1), "E2005", "E3005"),
    Person("E1007", "陈晨", "客服部", "客服主管", date(2018, 5, 20), "E2006", "E3006"),
    Person("E1008", "林晓", "销售部", "销售代表", date(2023, 2, 13), "E2005", "E3005"),
    Person("E2001", "李娜", "研发部", "研发一组经理", date(2017, 8, 7), "E3001", "E3001"),
)
PEOPLE: Final[dict[str, Person]] = {p.employee_id: p for p in _PEOPLE}

# Approvers and HR: only their names are needed (notifications, replies).
NAMES: Final[dict[str, str]] = {
    **{p.employee_id: p.name for p in _PEOPLE},
    "E2002": "陈刚",
    "E2003": "孙磊",
    "E2004": "马超",
    "E2005": "何静",
    "E2006": "杨帆",
    "E3001": "周强",
    "E3002": "吴敏",
    "E3003": "郑华",
    "E3004": "林峰",
    "E3005": "高远",
    "E3006": "黄海",
    HRBP_ID: "许婷",
}

# Balances per employee, year and leave type, in days. 2026 annual leave is pre-generated on
# 2025-12-01 (BusinessRules v2, rule 5.4); E1005's samples predate that, see BS_MT_020.
BALANCES: Final[dict[str, dict[int, dict[str, float]]]] = {
    "E1001": {2025: {"annual": 8.0, "sick": 10.0, "personal": 5.0}, 2026: {"annual": 15.0}},
    "E1002": {2025: {"annual": 4.6, "sick": 5.0, "personal": 3.0}, 2026: {"annual": 10.0}},
    "E1003": {2025: {"annual": 0.0, "sick": 2.0, "personal": 3.0}, 2026: {"annual": 0.0}},
    "E1004": {2025: {"annual": 3.0, "sick": 10.0, "personal": 5.0}, 2026: {"annual": 15.0}},
    "E1005": {2025: {"annual": 8.3, "sick": 10.0, "personal": 5.0}, 2026: {"annual": 12.0}},
    "E1006": {2025: {"annual": 9.7, "sick": 10.0, "personal": 5.0}, 2026: {"annual": 12.0}},
    "E1007": {2025: {"annual": 12.0, "sick": 10.0, "personal": 5.0}, 2026: {"annual": 15.0}},
    "E1008": {2025: {"annual": 10.0, "sick": 10.0, "personal": 5.0}, 2026: {"annual": 10.0}},
    "E2001": {2025: {"annual": 6.0, "sick": 10.0, "personal": 5.0}, 2026: {"annual": 15.0}},
}


def name_of(employee_id: str) -> str:
    """The display name of an employee or approver."""
    return NAMES[employee_id]


def is_workday(day: date) -> bool:
    """Monday to Friday and not a company holiday."""
    return day.weekday() < 5 and day not in HOLIDAYS


def leave_days_by_year(
    start: date, end: date, start_half: Half | None, end_half: Half | None
) -> dict[int, float]:
    """Workdays of a request per calendar year, in half-day units (BusinessRules v2, rule 4).

    `start_half="PM"` means the leave begins at 13:30 on `start` (that day counts 0.5);
    `end_half="AM"` means it ends at 12:00 on `end` (that day counts 0.5). Any half flag
    makes its day count 0.5, which is also how Execute's v1 tool read the ambiguous flags.
    """
    days: dict[int, float] = {}
    day = start
    while day <= end:
        if is_workday(day):
            weight = 1.0
            if day == start and start_half is not None:
                weight -= 0.5
            if day == end and end_half is not None:
                weight -= 0.5
            days[day.year] = days.get(day.year, 0.0) + weight
        day += timedelta(days=1)
    return days


def excluded_days(start: date, end: date) -> list[str]:
    """Non-working days inside a request, as 'YYYY-MM-DD（reason）' strings."""
    out: list[str] = []
    day = start
    while day <= end:
        if not is_workday(day):
            reason = HOLIDAYS.get(day, "周末")
            out.append(f"{day.isoformat()}（{reason}）")
        day += timedelta(days=1)
    return out


def approver_chain(person: Person, days: float) -> list[str]:
    """Approvers by total days (rule 7): ≤3 manager; ≤10 + department head; >10 + HRBP."""
    chain = [person.manager_id]
    if days > 3:
        chain.append(person.head_id)
    if days > 10:
        chain.append(HRBP_ID)
    return list(dict.fromkeys(chain))


def profile(person: Person) -> dict[str, Any]:
    """What `get_employee_profile` returns for `person`."""
    return {
        "employee_id": person.employee_id,
        "name": person.name,
        "department": person.department,
        "title": person.title,
        "hire_date": person.hire_date.isoformat(),
        "probation_end": person.probation_end.isoformat() if person.probation_end else None,
        "manager_id": person.manager_id,
        "manager_name": name_of(person.manager_id),
        "department_head_id": person.head_id,
        "department_head_name": name_of(person.head_id),
        "hrbp_id": HRBP_ID,
    }


def balances_state(employee_id: str, *, drop_years: tuple[int, ...] = ()) -> dict[str, Any]:
    """An employee's balances as the state holds them: year (string) → type → days."""
    return {
        str(year): dict(types)
        for year, types in BALANCES[employee_id].items()
        if year not in drop_years
    }
