""" "Did you mean …": the closest of the names a mistyped one could have meant.

Used wherever a person types a name baton must know (a scenario, an actor, a config key), so
a typo is answered with the name it probably was, not only with the list of all of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from difflib import get_close_matches

_CUTOFF = 0.75  # `leave_aplication` → `leave_application`, not every name that shares a word


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name `name` is most likely a typo of, or None."""
    found = get_close_matches(name, sorted(set(known)), n=1, cutoff=_CUTOFF)
    return found[0] if found else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """` — did you mean 'x'?` for the closest known name, or an empty string."""
    found = closest(name, known)
    return "" if found is None or found == name else f" — did you mean {found!r}?"
