"""`ModelRetry`: how an agent waits out a model that stays unavailable.

The Claude client already retries a failed call (the SDK's `max_retries`, with the server's
`retry-after`); a `ModelCallFailure` means those retries are spent: the API is unreachable,
answers 5xx, or is overloaded. That is the service's trouble, not the agent's, so it must not
become a handler failure, which would restart the actor and, repeated, spend its restart budget
(docs/architecture.md, "A message, from `baton tell` to a handler and back").

The smallest honest design: the agent keeps the round where it is (the round and every step
before the call are journaled, so nothing is lost if the process stops meanwhile), waits on
this backoff, and calls again, for as long as it takes. It logs `agent.model_unavailable`
with when it retries and tells the Scheduler, whose scenario state shows `waiting: ...,
retrying at HH:MM:SS` with the phase unchanged, until a call succeeds. Only that round waits:
the agent's other conversations go on (docs/architecture.md, "Keyed actors"), and a round of
theirs that finds the model unavailable waits the same way.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

import anyio

from baton._log import get_logger
from baton.models.errors import ModelCallFailure
from baton.runtime.backoff import Backoff

log = get_logger(__name__)
T = TypeVar("T")

MODEL_RETRY_BACKOFF = Backoff(initial=5.0, factor=2.0, maximum=300.0, jitter=0.25)
"""5 s, 10 s, 20 s ... up to 5 minutes between calls, less up to a quarter of jitter so that
agents parked by the same outage do not call again in step."""


@dataclass(frozen=True)
class ModelRetry:
    """The wait between calls to an unavailable model; `sleep`, `wall_clock` and `rand` are
    injectable so tests neither wait nor depend on the time of day."""

    backoff: Backoff = MODEL_RETRY_BACKOFF
    sleep: Callable[[float], Awaitable[None]] = field(default=anyio.sleep)
    wall_clock: Callable[[], float] = field(default=time.time)
    rand: Callable[[], float] = field(default=random.random)


def unavailable_reason(error: ModelCallFailure) -> str:
    """A few words on why the model is unavailable, for the scenario's `waiting` note.

    Read from the SDK error that caused it by its shape, so this module does not load the
    SDK (offline runs never do)."""
    cause = error.__cause__
    status = getattr(cause, "status_code", None)
    if isinstance(status, int) and status != 200:
        kind = getattr(cause, "type", None)
        return f"API answered HTTP {status}" + (f" {kind}" if isinstance(kind, str) else "")
    if status == 200:
        return "API broke off the reply stream"
    if any(klass.__name__ == "APIConnectionError" for klass in type(cause).__mro__):
        return "API unreachable"  # a timeout is one too (APITimeoutError)
    return "model call failed"


Waiting = Callable[[str | None, datetime | None], Awaitable[None]]
"""Told why the model is unavailable and when the next call is (both None: available again)."""


async def until_available(
    call: Callable[[], Awaitable[T]],
    retry: ModelRetry | None,
    *,
    actor: str,
    on_waiting: Waiting,
) -> T:
    """`call()`, made again on `retry`'s backoff for as long as the model is unavailable
    (without `retry`, its failure is raised). Nothing is journaled for a failed call, so the
    round stays exactly where it was while it waits."""
    failures = 0
    while True:
        try:
            result = await call()
        except ModelCallFailure as error:
            if retry is None:
                raise
            delay = retry.backoff.delay(failures, retry.rand())
            failures += 1
            retry_at = datetime.fromtimestamp(retry.wall_clock() + delay, UTC)
            reason = unavailable_reason(error)
            log.warning(
                "agent.model_unavailable",
                actor=actor,
                reason=reason,
                error=str(error),
                failures=failures,
                retry_in_s=round(delay, 3),
                retry_at=retry_at.isoformat(timespec="seconds"),
            )
            await on_waiting(reason, retry_at)
            await retry.sleep(delay)
            continue
        if failures:
            log.info("agent.model_available", actor=actor, failures=failures)
            await on_waiting(None, None)
        return result
