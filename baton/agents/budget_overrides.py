"""A scenario's budget overrides (`[actors.<role>]` in its `scenario.toml`, `Dispatch.budget`),
checked against the agent's own budget before they are used.

The overrides replace keys of the agent's `ContextBudget` for one scenario's conversation
(docs/context.md, "Budgets"). They are checked as strictly as `baton.toml`: an unknown key is
named as such, and the merged budget must validate, so a threshold at or above the window is
refused even when each number is fine on its own. The Scheduler checks them when a scenario is
submitted; the agent checks a work order's again, since anyone may send one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo

from baton.context.strategy import ContextBudget
from baton.errors import ConfigError, validation_problems

BUDGET_KEYS: frozenset[str] = frozenset(ContextBudget.model_fields)
"""The keys a scenario may override: the `ContextBudget`'s, nothing the agent would ignore."""


def _optional(field: FieldInfo) -> tuple[Any, FieldInfo]:
    annotation: Any = field.annotation
    return annotation | None, FieldInfo.merge_field_infos(field, default=None)


BudgetOverrides: type[BaseModel] = create_model(
    "BudgetOverrides",
    __config__=ConfigDict(extra="forbid", frozen=True),
    **{name: _optional(field) for name, field in ContextBudget.model_fields.items()},  # type: ignore[call-overload]
)
"""Overrides checked key by key, on their own: each one a budget key and within that key's
own bounds (a window above 0, a margin below 1). How they combine with an agent's budget (a
threshold inside its window) only the agent can tell (`apply_overrides`)."""


def check_override_keys(overrides: dict[str, Any]) -> dict[str, Any]:
    """`overrides` as given when each key is a budget key within its own bounds; else the
    `ValidationError` of `BudgetOverrides` (a message type refuses them at its boundary)."""
    BudgetOverrides.model_validate(overrides)
    return overrides


def override_problems(base: ContextBudget, overrides: object, where: tuple[str, ...]) -> list[str]:
    """One line per problem of `overrides` on top of `base`; `where` is the dotted location
    the lines name (e.g. `("actors", "init")`). Empty when they are fine."""
    place = ".".join(where)
    if not isinstance(overrides, Mapping):
        return [f"{place}: must be a table of budget keys ({', '.join(sorted(BUDGET_KEYS))})"]
    unknown = [
        f"unknown key {place + '.' + str(key)!r}" for key in overrides if key not in BUDGET_KEYS
    ]
    try:
        ContextBudget.model_validate({**base.model_dump(), **overrides})
    except ValidationError as exc:
        located = [
            {**error, "loc": (*where, *error["loc"])} for error in exc.errors(include_url=False)
        ]
        return unknown + validation_problems(located, show_input=False, unknown_keys=True)
    return unknown


def apply_overrides(
    base: ContextBudget, overrides: Mapping[str, Any], *, source: str, where: tuple[str, ...]
) -> ContextBudget:
    """`base` with `overrides` applied; a one-line `ConfigError` naming `source` and each bad
    or unknown key otherwise."""
    problems = override_problems(base, overrides, where)
    if problems:
        raise ConfigError(f"invalid budget in {source}: " + "; ".join(problems))
    return ContextBudget.model_validate({**base.model_dump(), **overrides})
