"""A compaction summary asked for in the background, before the threshold (docs/context.md,
"Background compaction"): the agent goes on working while the model writes it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
from anyio.abc import TaskGroup

from baton.context.strategy import ContextBudget


@dataclass
class BackgroundSummary:
    """One request for the summary of compaction number `compaction`, made when the history
    ended at step `through_seq`; `done` once it was answered (`text`, or None and why not:
    `reason`) or cancelled."""

    compaction: int
    through_seq: int
    turn: int  # the `turn` of its model call: the conversation's next step then
    started: float  # on the strategy's clock
    done: anyio.Event = field(default_factory=anyio.Event)
    answered: bool = False  # False once done: cancelled with its round, never answered
    text: str | None = None
    reason: str = ""


@asynccontextmanager
async def background_tasks() -> AsyncIterator[TaskGroup]:
    """A task group for the block whose own error comes out as itself, not wrapped in an
    exception group: the round's callers tell its failures apart by type."""
    try:
        async with anyio.create_task_group() as group:
            yield group
    except BaseExceptionGroup as grouped:
        if len(grouped.exceptions) == 1:
            raise grouped.exceptions[0] from None
        raise


def precompact_tokens(budget: ContextBudget, compacted_tokens: int) -> float:
    """The context size past which the summary is asked for: `precompact_at` of the way from
    where the last compaction left the context (nothing, before the first) to the threshold,
    so a compaction that lands near the threshold is not followed by a request at once."""
    base = min(compacted_tokens, budget.compact_threshold)
    return base + budget.precompact_at * (budget.compact_threshold - base)


def hard_limit(budget: ContextBudget) -> int:
    """How far past the threshold an agent goes on while its summary is being written:
    halfway from the threshold to the window less the room for an answer; there it waits."""
    room = budget.context_window - budget.max_output_tokens - budget.compact_threshold
    return budget.compact_threshold + max(0, room) // 2
