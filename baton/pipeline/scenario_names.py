"""The one rule for scenario names, checked the same way wherever a name comes in.

A scenario name becomes a folder (`scenarios/<name>/`), a state file
(`.baton/scheduler/<name>.json`) and, with `@<run>` appended, a journal file
(`.baton/journal/<actor>/<name>@<run>.jsonl`; docs/architecture.md, "Where state lives"). So
it must be a plain file name on every file system baton writes to: no `.` or `..`, no hidden
or option-like leading `.`, `_` or `-`, no separator, and short enough that `@<run>` still
fits the journal's 128-character limit.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, WithJsonSchema

from baton.pipeline.errors import InvalidScenarioNameError

SCENARIO_NAME_MAX = 120
"""At most this many characters: leaves room for `@<run>` within a journal name's 128."""

SCENARIO_NAME_RULE = (
    f"a scenario name is 1 to {SCENARIO_NAME_MAX} characters, starts with a letter or a "
    "digit and goes on with letters, digits, '_', '-' or '.'"
)
_FIRST = re.compile(r"[A-Za-z0-9]")
_REST = re.compile(r"[A-Za-z0-9_.-]")
SCENARIO_NAME_PATTERN = rf"^[A-Za-z0-9][A-Za-z0-9_.-]{{0,{SCENARIO_NAME_MAX - 1}}}$"
"""The rule as one regular expression, for schemas: the control API's OpenAPI document says
which names it takes (docs/architecture.md, "server/")."""


def _problem(name: str) -> str | None:
    if not name:
        return "is empty"
    if len(name) > SCENARIO_NAME_MAX:
        return f"is {len(name)} characters long"
    if not _FIRST.fullmatch(name[0]):
        return f"starts with {name[0]!r}"
    for char in name[1:]:
        if not _REST.fullmatch(char):
            return f"contains {char!r}"
    return None


def check_scenario_name(name: str) -> str:
    """`name` if it follows the rule; `InvalidScenarioNameError` saying what breaks it."""
    problem = _problem(name)
    if problem is None:
        return name
    shown = name if len(name) <= 40 else name[:37] + "..."
    raise InvalidScenarioNameError(
        f"scenario name {shown!r} is not allowed: it {problem}; {SCENARIO_NAME_RULE}"
    )


ScenarioName = Annotated[
    str,
    AfterValidator(check_scenario_name),
    WithJsonSchema({"type": "string", "pattern": SCENARIO_NAME_PATTERN}),
]
"""A `str` field holding a scenario name: pydantic reports a broken rule as a field error."""
