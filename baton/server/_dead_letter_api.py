"""`GET /dead-letters`: the runtime's dead letters, newest last (`baton dead-letters`).

The list is the runtime's own dead-letter log (`baton.runtime.dead_letters`), which every
mailbox backend reports to (memory, SQLite, Redis): the letters given up on by this process
since it started, bounded by `[runtime] dead_letter_max` and `dead_letter_days`. A SQLite
mailbox also keeps its letters on disk across restarts, and a Redis one in its dead-letter
stream; those stores are not read here (README.md, "Durable mailboxes and crashes").
"""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, Query

from baton.runtime.runtime import Runtime
from baton.server._dead_letter_models import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    DeadLetterList,
    report_of,
)


def dead_letter_list(runtime: Runtime, limit: int) -> DeadLetterList:
    """The newest `limit` dead letters of `runtime`."""
    letters = list(runtime.dead_letters)
    return DeadLetterList(
        total=runtime.dead_letters.total,
        kept=len(letters),
        letters=[report_of(letter) for letter in letters[-limit:]],
    )


def dead_letter_routes(app: FastAPI, runtime: Runtime) -> None:
    """Add `GET /dead-letters` over `runtime` to `app`."""

    @app.get("/dead-letters", response_model=DeadLetterList)
    async def dead_letters(
        limit: Annotated[
            int, Query(ge=1, le=MAX_LIMIT, description="how many of the newest to list")
        ] = DEFAULT_LIMIT,
    ) -> DeadLetterList:
        """The newest dead letters, newest last, with the reason each was given up on."""
        return dead_letter_list(runtime, limit)
