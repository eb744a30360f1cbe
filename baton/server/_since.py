"""`--since WHEN` of `baton tail`: a duration back from now or an ISO 8601 time. Kept apart
from the filters: every command's parser reads it, and only `tail` loads the filters and
what they import (docs/architecture.md, "What a command imports")."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
SINCE_HELP = "a duration back from now (30s, 10m, 2h, 1d) or an ISO 8601 time (UTC unless given)"


def parse_since(text: str, *, now: datetime | None = None) -> datetime:
    """The moment `--since TEXT` names, in UTC; `ValueError` saying what to write instead."""
    match = _DURATION.match(text)
    if match is not None:
        amount, unit = float(match.group(1)), match.group(2)
        return (now or datetime.now(UTC)) - timedelta(seconds=amount * _UNIT_SECONDS[unit])
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"{text!r} is not a duration (30s, 10m, 2h, 1d) or an ISO 8601 time "
            "(2026-11-23T22:00:00)"
        ) from None
    # The log's times are UTC; a time written without a zone is read as one of them.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
