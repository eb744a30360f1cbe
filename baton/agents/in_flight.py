"""The model calls this process has made whose replies are not journaled yet.

A reply is journaled the moment it arrives, so a call counts from the moment it is sent
until its reply (or its failure) is safe: stopping then would pay for it again after the
restart. `baton run` waits for this count to reach zero when it stops, and cancels every
other wait (a round waiting for an unavailable model, a tool) at once (README.md, "Running
baton"). One count per process: every agent's calls, each counted in the task that made it.
"""

from __future__ import annotations

from contextvars import ContextVar

import anyio

_unjournaled: ContextVar[bool] = ContextVar("baton_reply_unjournaled", default=False)


class CallsInFlight:
    """How many calls wait for a reply or for their reply's journaling; wait for none."""

    def __init__(self) -> None:
        self._count = 0
        self._idle: list[anyio.Event] = []

    @property
    def count(self) -> int:
        """The calls in flight now."""
        return self._count

    def sent(self) -> None:
        """A call of the running task is sent: counted until `settled`."""
        if not _unjournaled.get():
            _unjournaled.set(True)
            self._count += 1

    def settled(self) -> None:
        """The running task's call is journaled, or failed: it no longer counts."""
        if _unjournaled.get():
            _unjournaled.set(False)
            self._count -= 1
            if self._count == 0:
                idle, self._idle = self._idle, []
                for event in idle:
                    event.set()

    async def wait_idle(self) -> None:
        """Return once no call is in flight (at once if none is)."""
        while self._count:
            event = anyio.Event()
            self._idle.append(event)
            await event.wait()


CALLS_IN_FLIGHT = CallsInFlight()
"""This process's count."""
