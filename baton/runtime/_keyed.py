"""Keyed dispatch: one actor's messages handled for several keys at once, each key in order.

A keyed actor (`Actor.actor_max_concurrent_keys` above 1) is run by a `KeyedDispatcher`
instead of the cell's one-message loop (docs/architecture.md, "Keyed actors"):

- the dispatcher takes deliveries from the mailbox and puts each on its key's queue;
- a key with no worker gets one while fewer than the limit run; beyond it, keys wait their
  turn in arrival order, and a worker whose key still has messages while others wait goes to
  the back of that line after each message, so a busy key cannot starve a new one;
- it stops taking deliveries while `bound` of them are in hand (taken and not yet settled):
  the mailbox stays the place where work waits, and its senders feel the backpressure.

A delivery waiting on its key's queue was taken from the mailbox: a durable mailbox counts it
as delivered, and redelivers it after a crash; acks are per delivery, in whatever order the
keys finish. Handling one delivery (supervision, ack, reply) is the cell's `handle`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Hashable, Iterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup

from baton.mailboxes.errors import MailboxClosedError
from baton.runtime.logging import MessageScope, enter_scope

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from baton.mailboxes.envelope import Delivery, Envelope
    from baton.mailboxes.protocol import Mailbox

Key = Hashable | None
KeyOf = Callable[["Envelope"], Key]
Handle = Callable[["Delivery", MessageScope], Awaitable[None]]


class InstanceGate:
    """The actor instance, shared by the handlers of every key. Handlers pass through
    `entered()`; a restart takes the instance to itself (`exclusive()`): new handlers wait,
    and the restart begins once the handlers in flight have returned."""

    def __init__(self) -> None:
        self.running = 0
        self._open = anyio.Event()
        self._open.set()
        self._idle = anyio.Event()
        self._restart = anyio.Lock()

    async def wait_open(self) -> None:
        """Return once no restart holds the instance."""
        # A loop: another restart may have closed the gate again by the time this one wakes.
        while not self._open.is_set():
            await self._open.wait()

    @asynccontextmanager
    async def entered(self) -> AsyncIterator[None]:
        await self.wait_open()
        self.running += 1
        try:
            yield
        finally:
            self.running -= 1
            if self.running == 0:
                self._idle.set()

    @asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        async with self._restart:
            opened = self._open = anyio.Event()
            try:
                while self.running:
                    self._idle = anyio.Event()
                    await self._idle.wait()
                yield
            finally:
                opened.set()


class KeyedDispatcher:
    """Routes one mailbox's deliveries to per-key queues, worked on by up to `limit` keys."""

    def __init__(
        self,
        actor: str,
        mailbox: Mailbox,
        *,
        key_of: KeyOf,
        limit: int,
        bound: int,
        handle: Handle,
    ) -> None:
        if limit < 1 or bound < 1:
            raise ValueError(f"limit and bound must be >= 1, got {limit} and {bound}")
        self._actor = actor
        self._mailbox = mailbox
        self._key_of = key_of
        self._limit = limit
        self._bound = bound
        self._handle = handle
        self._queues: dict[Key, deque[Delivery]] = {}  # every key with deliveries not started
        self._active: dict[Key, Envelope | None] = {}  # keys with a worker: what it handles
        self._waiting: deque[Key] = deque()  # keys with deliveries and no worker, oldest first
        self._in_hand = 0
        self._room = anyio.Event()
        self._tg: TaskGroup | None = None
        self.aborted = False

    @property
    def in_hand(self) -> int:
        """Deliveries taken from the mailbox and not yet settled."""
        return self._in_hand

    def queued(self) -> int:
        """Deliveries taken from the mailbox that wait behind their keys."""
        return sum(len(queue) for queue in self._queues.values())

    def working_on(self) -> list[Key]:
        """The keys whose handler is running now, oldest worker first."""
        return [key for key, envelope in self._active.items() if envelope is not None]

    def busy(self) -> bool:
        return any(envelope is not None for envelope in self._active.values())

    def leftovers(self) -> Iterator[Envelope]:
        """The envelopes taken from the mailbox whose handling never started."""
        for queue in self._queues.values():
            for delivery in queue:
                yield delivery.envelope

    def give_back(self, delivery: Delivery) -> None:
        """Put a delivery whose handling never started back at the front of its key's
        queue (the actor is stopping: it is one of the `leftovers`)."""
        key = self._key_of(delivery.envelope)
        self._queues.setdefault(key, deque()).appendleft(delivery)

    def abort(self) -> None:
        """Stop every worker and the dispatcher now (the actor is stopping for good)."""
        self.aborted = True
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    async def run(self) -> None:
        """Dispatch until the mailbox is closed and drained, then wait for the keys in
        flight to finish (the shutdown drain), or until `abort()`."""
        mailbox = self._mailbox
        async with anyio.create_task_group() as tg:
            self._tg = tg
            while True:
                while self._in_hand >= self._bound:
                    self._room = anyio.Event()
                    await self._room.wait()
                delivery = mailbox.receive_nowait()
                if delivery is None:
                    try:
                        delivery = await mailbox.receive()
                    except MailboxClosedError:
                        break
                self._in_hand += 1
                self._route(delivery)
        self._tg = None

    def _route(self, delivery: Delivery) -> None:
        key = self._key_of(delivery.envelope)
        queue = self._queues.get(key)
        if queue is not None:
            queue.append(delivery)  # its key has a worker, or waits for one already
            return
        self._queues[key] = deque((delivery,))
        if key in self._active:
            return
        if len(self._active) < self._limit:
            self._start(key)
        else:
            self._waiting.append(key)

    def _start(self, key: Key) -> None:
        assert self._tg is not None
        self._active[key] = None
        self._tg.start_soon(self._work, key, name=f"{self._actor}[{key!r}]")

    async def _work(self, key: Key) -> None:
        scope = MessageScope(self._actor)
        enter_scope(scope)  # this task's own: handlers of other keys have theirs
        active, queues, waiting = self._active, self._queues, self._waiting
        while not self.aborted:  # no handler may start once the actor is stopping for good
            queue = queues[key]
            delivery = queue.popleft()
            active[key] = delivery.envelope
            try:
                await self._handle(delivery, scope)
            finally:
                active[key] = None
                self._in_hand -= 1
                self._room.set()
            if queue and not waiting:
                continue
            del active[key]
            if queue:
                waiting.append(key)  # its turn is over while others wait: back of the line
            else:
                del queues[key]
            if not waiting:
                return
            key = waiting.popleft()
            active[key] = None
