"""The context engine's errors: a request the Messages API would refuse, a summary that did not
come back usable.

Each derives from `BatonError` (`baton.errors`, which re-exports them for users)."""

from __future__ import annotations

from baton.errors import RuntimeFailure, UsageError


class InvalidRequestError(UsageError):
    """Raised when a Messages API request breaks one of the API's documented rules."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid Messages API request: " + "; ".join(problems))


class SummaryFailure(RuntimeFailure):
    """Raised when a compaction summary could not be produced or did not validate."""
