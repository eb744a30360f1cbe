"""`MemoryMailbox`: an in-process mailbox on a bounded anyio memory object stream."""

from __future__ import annotations

from asyncio import Future, get_running_loop, sleep
from collections import deque

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from baton.mailboxes.envelope import Delivery, Envelope
from baton.mailboxes.errors import MailboxClosedError, MailboxFullError
from baton.mailboxes.protocol import DeadLetterSink

DEFAULT_CAPACITY = 1024


_new_tuple = tuple.__new__


class MemoryMailbox:
    """A bounded FIFO mailbox living in this process.

    Every operation tries the `*_nowait` path first: a plain `await send()` / `await
    receive()` yields to the event loop even when it need not wait, and that pass costs more
    than the message itself (4-10x measured).

    An empty mailbox's receiver waits on a bare asyncio future of its own, which a send
    settles, rather than in the stream's own `receive()`: that one looks the async backend up
    twice per wait (its checkpoint, its `anyio.Event`), and an actor asked from outside waits
    once per message (`bench/mailbox.py`, `ask-out`). The envelope also stays in the stream
    until the woken receiver takes it, so a receiver cancelled meanwhile loses nothing (the
    stream hands it to the receiver as it wakes it, and it was lost with it).
    """

    def __init__(
        self,
        name: str,
        *,
        capacity: int = DEFAULT_CAPACITY,
        dead_letters: DeadLetterSink | None = None,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"mailbox capacity must be >= 1, got {capacity}")
        self._name = name
        self._capacity = capacity
        self._dead_letters = dead_letters
        send, receive = anyio.create_memory_object_stream[Envelope](capacity)
        self._send: MemoryObjectSendStream[Envelope] = send
        self._receive: MemoryObjectReceiveStream[Envelope] = receive
        # A requeued envelope goes to the front so a retry does not overtake its successors.
        self._requeued: list[Envelope] = []
        self._receivers: deque[Future[None]] = deque()  # `receive()`s waiting, oldest first

    @property
    def name(self) -> str:
        return self._name

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def durable(self) -> bool:
        return False

    async def send(self, envelope: Envelope) -> None:
        try:
            self._send.send_nowait(envelope)
        except anyio.WouldBlock:
            try:
                await self._send.send(envelope)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                raise MailboxClosedError(self._name) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise MailboxClosedError(self._name) from None
        if self._receivers:
            # Also after a wait for room: the room may have come while the receiver went on
            # to wait for the next message, and the envelope then went into the stream.
            self._wake_one()

    def send_nowait(self, envelope: Envelope) -> None:
        try:
            self._send.send_nowait(envelope)
        except anyio.WouldBlock:
            raise MailboxFullError(self._name, self._capacity) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise MailboxClosedError(self._name) from None
        if self._receivers:
            self._wake_one()

    async def receive(self) -> Delivery:
        receive_nowait = self._receive.receive_nowait
        yielded = False
        while True:
            if self._requeued:
                return Delivery(self._requeued.pop())
            try:
                return _new_tuple(Delivery, (receive_nowait(), None))
            except anyio.WouldBlock:
                pass
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                self._receive.close()
                raise MailboxClosedError(self._name) from None
            if not yielded:
                # Let the tasks that are ready run first, as the stream's own `receive()`
                # does: a sender among them (the asker of the reply just sent) is then
                # received from without a future, and a round trip takes one pass of the
                # event loop instead of two.
                await sleep(0)
                yielded = True
                continue
            waiter: Future[None] = get_running_loop().create_future()
            self._receivers.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter.cancelled():
                    self._receivers.remove(waiter)
                else:
                    # Woken for an envelope it will not take: another receiver takes it.
                    self._wake_one()
                raise

    def _wake_one(self) -> None:
        receivers = self._receivers
        while receivers:
            waiter = receivers.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _wake_all(self) -> None:
        """The mailbox closed: every waiting receiver takes what is left, then stops."""
        while self._receivers:
            waiter = self._receivers.popleft()
            if not waiter.done():
                waiter.set_result(None)

    def receive_nowait(self) -> Delivery | None:
        if self._requeued:
            return Delivery(self._requeued.pop())
        try:
            # tuple.__new__ skips NamedTuple's Python-level __new__: half the cost, per message.
            return tuple.__new__(Delivery, (self._receive.receive_nowait(), None))
        except anyio.WouldBlock:
            return None
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._receive.close()
            return None

    async def ack(self, delivery: Delivery) -> None:
        # In memory, a received envelope is already gone from the queue: nothing to release.
        return None

    async def nack(self, delivery: Delivery, *, requeue: bool, reason: str) -> None:
        envelope = delivery.envelope
        if requeue:
            self._requeued.append(envelope.retried())  # handed out again, one attempt later
        elif self._dead_letters is not None:
            self._dead_letters.dead_letter(envelope, reason)

    def depth(self) -> int:
        stats = self._send.statistics()
        return stats.current_buffer_used + stats.tasks_waiting_send + len(self._requeued)

    async def close(self) -> None:
        self._send.close()
        self._wake_all()

    def drain_nowait(self) -> list[Envelope]:
        drained = list(reversed(self._requeued))
        self._requeued.clear()
        while True:
            try:
                drained.append(self._receive.receive_nowait())
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                break
        # Draining is final: the actor is gone, so nobody receives from this box again.
        self._send.close()
        self._receive.close()
        self._wake_all()
        return drained
