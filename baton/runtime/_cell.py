"""The cell around one running actor: its loop, its pending asks, its supervision."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

import anyio
from anyio.abc import TaskStatus

from baton._log import get_logger
from baton.errors import BatonError, DiskFullFailure, UsageError, out_of_space, unretriable
from baton.mailboxes.envelope import Delivery, Envelope
from baton.mailboxes.errors import MailboxClosedError
from baton.mailboxes.protocol import DeadLetterSink, Mailbox
from baton.runtime._keyed import InstanceGate, KeyedDispatcher
from baton.runtime.actor import Actor, BoundHandler
from baton.runtime.disk_writes import DISK_FULL_RETRY
from baton.runtime.errors import ActorDeadError, HandlerFailedError, UnhandledMessageError
from baton.runtime.logging import MessageScope, enter_scope
from baton.runtime.ref import ActorRef
from baton.runtime.supervision import RestartTracker, SupervisorPolicy
from baton.runtime.token_log import TokenLog

log = get_logger(__name__)


class ActorState(StrEnum):
    STARTING = "starting"
    RUNNING = "running"
    RESTARTING = "restarting"
    COOLING_DOWN = "cooling_down"  # restart budget spent: restarts after the policy's cooldown
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"  # stopped by the supervisor: restart intensity exceeded


class PendingAsk:
    """The asker's side of one ask: resolved once, by a reply, an error or its deadline.

    It wakes the asker through a bare asyncio future, which also carries the reply: an
    `anyio.Event` wraps one in an `asyncio.Event` and its waiter list, costs that every ask
    paid (`bench/mailbox.py`, `ask-out`). The runtime runs on asyncio (`baton.server.cli`
    starts it so), as its Redis backend must. The future is cancelled when its asker is;
    then nothing settles it any more.
    """

    __slots__ = ("error", "waiter")

    def __init__(self, waiter: asyncio.Future[Any]) -> None:
        # Its result is the reply, or `EXPIRED`; None with `error` set when the ask failed.
        self.waiter = waiter
        self.error: BaseException | None = None

    @property
    def settled(self) -> bool:
        """Whether a reply or an error arrived (a waiter cancelled with its asker did not)."""
        waiter = self.waiter
        return waiter.done() and not waiter.cancelled()

    def resolve(self, value: Any) -> None:
        if not self.waiter.done():
            self.waiter.set_result(value)

    def fail(self, error: BaseException) -> None:
        if not self.waiter.done():
            self.error = error
            self.waiter.set_result(None)

    def expire(self) -> None:
        """The ask's deadline passed first: the asker raises `AskTimeoutError`."""
        if not self.waiter.done():
            self.waiter.set_result(EXPIRED)

    def outcome(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.waiter.result()


# What a `PendingAsk` whose deadline passed before its answer came holds.
EXPIRED: Any = object()


# Where an ask's outcome goes when the asker is not in this process (envelope, value, error).
ReplyElsewhere = Callable[[Envelope, Any, "BaseException | None"], None]


class _StopActor(Exception):
    """Internal: the supervisor gave up on this actor."""


class ActorCell:
    """Runs one actor: one message at a time, in arrival order, under supervision (a keyed
    actor: one message at a time per key, up to its limit of keys at once)."""

    def __init__(
        self,
        name: str,
        factory: Callable[[], Actor],
        mailbox: Mailbox,
        *,
        ref: ActorRef,
        policy: SupervisorPolicy,
        dead_letters: DeadLetterSink,
        token_log: TokenLog,
        reply_elsewhere: ReplyElsewhere | None = None,
        gate: anyio.Event | None = None,
    ) -> None:
        self.name = name
        self._gate = gate
        self.ref = ref
        self.mailbox = mailbox
        self.pending: dict[str, PendingAsk] = {}
        self.state = ActorState.STARTING
        self.handled = 0
        self.failures = 0
        self.restarts = 0
        self.stop_reason: str | None = None
        self.done = anyio.Event()
        self.instance: Actor | None = None
        self._factory = factory
        self._policy = policy
        self._tracker = RestartTracker(policy)
        self._dead_letters = dead_letters
        self._token_log = token_log
        self._scope: anyio.CancelScope | None = None
        self._dispatch: dict[type, BoundHandler] = {}
        self._failing = False
        self._room_waits = 0  # consecutive waits for disk space
        self._log_scope = MessageScope(name)
        self._reply_elsewhere = reply_elsewhere
        self._keyed: KeyedDispatcher | None = None

    @property
    def busy(self) -> bool:
        """Whether a handler is running right now."""
        keyed = self._keyed
        return self._log_scope.envelope is not None or (keyed is not None and keyed.busy())

    def depth(self) -> int:
        """Messages waiting: in the mailbox, and (a keyed actor's) taken, behind their keys."""
        keyed = self._keyed
        return self.mailbox.depth() + (keyed.queued() if keyed is not None else 0)

    def working_on(self) -> list[str]:
        """The keys whose handlers run now (a keyed actor's; a plain actor has none)."""
        keyed = self._keyed
        if keyed is None:
            return []
        return ["default" if key is None else str(key) for key in keyed.working_on()]

    @property
    def alive(self) -> bool:
        return self.state in (
            ActorState.STARTING,
            ActorState.RUNNING,
            ActorState.RESTARTING,
            ActorState.COOLING_DOWN,
        )

    def cancel(self) -> None:
        """Abandon the message in hand and stop now (the shutdown deadline passed)."""
        if self._scope is not None:
            self._scope.cancel()

    def request_stop(self) -> None:
        """Mark the actor stopping (the runtime closes its mailbox to drain it). One that only
        waits out a cool-down has nothing to drain: it stops at once, leaving the message in
        hand unacked (a durable mailbox delivers it again on the next start)."""
        cooling = self.state is ActorState.COOLING_DOWN
        if self.alive:
            self.state = ActorState.STOPPING
        if cooling:
            self.cancel()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        with anyio.CancelScope() as scope:
            self._scope = scope
            try:
                self.instance = await self._start_instance()
                self.state = ActorState.RUNNING
                task_status.started()
                if self._gate is not None:
                    # Spawned with others that it may tell (docs/architecture.md, "Starting
                    # together"): no message is handled before they are all registered.
                    await self._gate.wait()
                limit = self.instance.actor_max_concurrent_keys
                if limit > 1:
                    await self._keyed_loop(self.instance, limit)
                else:
                    await self._loop()
            except _StopActor:
                self.state = ActorState.FAILED
            finally:
                with anyio.CancelScope(shield=True):
                    await self._finish()

    async def _start_instance(self) -> Actor:
        instance = self._factory()
        instance.actor_ref = self.ref
        await instance.on_start()
        return instance

    def _resolve(self, message: object) -> BoundHandler | None:
        # Cached per type for the current instance: resolution walks the MRO. A restart
        # clears the cache along with the instance.
        assert self.instance is not None
        method = self.instance.actor_resolve(message)
        if method is not None:
            self._dispatch[type(message)] = method
        return method

    async def _loop(self) -> None:
        mailbox = self.mailbox
        dispatch = self._dispatch
        scope = self._log_scope
        needs_ack = mailbox.durable  # a non-durable ack releases nothing: skip the await
        enter_scope(scope)
        while True:
            delivery = mailbox.receive_nowait()
            if delivery is None:
                try:
                    delivery = await mailbox.receive()
                except MailboxClosedError:
                    return
            # The success path is inlined here: it is the hot path of every message.
            while True:
                envelope = delivery.envelope
                payload = envelope.payload
                method = dispatch.get(type(payload)) or self._resolve(payload)
                if method is None:
                    await self._on_unhandled(delivery)
                    break
                scope.envelope = envelope  # also what the handler's `actor_envelope` reads
                try:
                    result = await method(payload)
                except Exception as exc:  # noqa: BLE001 - supervision is exactly this catch-all
                    retry = await self._on_handler_error(delivery, exc)
                    scope.envelope = None
                    if retry is None:
                        break
                    delivery = retry
                    continue
                scope.envelope = None
                if needs_ack:
                    await mailbox.ack(delivery)
                self.handled += 1
                if self._failing:
                    self._recovered()
                correlation_id = envelope.correlation_id
                if correlation_id is not None:
                    pending = self.pending.pop(correlation_id, None)
                    if pending is not None:  # `_settle`, for an asker in this process
                        pending.resolve(result)
                    else:
                        self._settle(envelope, value=result)
                break

    async def _keyed_loop(self, first: Actor, limit: int) -> None:
        """Handle a keyed actor's messages, up to `limit` keys at once (see `_keyed`)."""
        gate = InstanceGate()

        def key_of(envelope: Envelope) -> Hashable | None:
            try:
                return (self.instance or first).actor_key(envelope.payload)
            except Exception as exc:  # noqa: BLE001 - a bad key must not stop the dispatcher
                log.warning(
                    "actor.key_failed",
                    actor=self.name,
                    message_id=envelope.id,
                    error=f"{type(exc).__name__}: {exc}",
                )
                return None

        async def handle(delivery: Delivery, scope: MessageScope) -> None:
            await self._handle_keyed(delivery, scope, gate)

        keyed = self._keyed = KeyedDispatcher(
            self.name,
            self.mailbox,
            key_of=key_of,
            limit=limit,
            bound=self.mailbox.capacity,
            handle=handle,
        )
        await keyed.run()
        if keyed.aborted:
            raise _StopActor

    async def _handle_keyed(
        self, delivery: Delivery, scope: MessageScope, gate: InstanceGate
    ) -> None:
        """One delivery of a keyed actor, as `_loop` handles one: the handlers of other keys
        share the instance, so a restart waits until they have returned (`InstanceGate`)."""
        keyed = self._keyed
        assert keyed is not None
        while True:
            envelope = delivery.envelope
            payload = envelope.payload
            error: Exception | None = None
            try:
                await gate.wait_open()
            except BaseException:
                keyed.give_back(delivery)  # stopped before its handler began: a leftover
                raise
            async with gate.entered():
                method = self._dispatch.get(type(payload)) or self._resolve(payload)
                if method is None:
                    await self._on_unhandled(delivery)
                    return
                scope.envelope = envelope
                try:
                    result = await method(payload)
                except Exception as exc:  # noqa: BLE001 - supervision is exactly this catch-all
                    error = exc
                finally:
                    scope.envelope = None
            if error is None:
                break
            scope.envelope = envelope  # the supervision's log lines name the message
            try:
                if unretriable(error) is not None:
                    # Settled, not retried: nothing happens to the instance, so no wait.
                    retry = await self._on_handler_error(delivery, error)
                else:
                    async with gate.exclusive():
                        try:
                            retry = await self._on_handler_error(delivery, error)
                        except _StopActor:
                            keyed.abort()
                            return
            finally:
                scope.envelope = None
            if retry is None:
                return
            delivery = retry
        await self._handled(delivery, result)

    async def _handled(self, delivery: Delivery, result: Any) -> None:
        """Settle a delivery its handler returned from: `_loop`'s success path, not inlined."""
        if self.mailbox.durable:
            await self.mailbox.ack(delivery)
        self.handled += 1
        if self._failing:
            self._recovered()
        if delivery.envelope.correlation_id is not None:
            self._settle(delivery.envelope, value=result)

    def _recovered(self) -> None:
        """A handler returned after failures (or waits for disk space): the streak is over."""
        self._failing = False
        if self._room_waits:
            self._room_waits = 0
            self.stop_reason = None  # the wait for disk space is over
        self._tracker.succeeded()

    async def _on_unhandled(self, delivery: Delivery) -> None:
        envelope = delivery.envelope
        assert self.instance is not None
        error = UnhandledMessageError(
            self.name, envelope.message_type, list(self.instance.actor_message_types())
        )
        await self._refuse(delivery, error, str(error))

    async def _on_handler_error(self, delivery: Delivery, error: Exception) -> Delivery | None:
        """Supervise one failure; return the delivery to retry, or None when it is settled.

        Two failures are settled at once, as no retry can help: a `UsageError` (the message
        is at fault, not the actor) and a `FileTooLargeFailure` (a file that may not grow:
        no wait makes room, and a restart would only fail the same write again, or loop on
        a round an agent resumes on start). Either one goes to the asker, once, or with a
        told message to the dead letters with the reason, and the instance is kept."""
        envelope = delivery.envelope
        final = unretriable(error)
        if isinstance(final, UsageError):
            await self._refuse(delivery, final, f"refused: {type(final).__name__}: {final}")
            return None
        if final is not None:
            # README.md, "After a full disk or a damaged file": unlike a full disk, not
            # waited out.
            self.failures += 1
            log.error(
                "actor.file_too_large",
                actor=self.name,
                message_id=envelope.id,
                message_type=envelope.message_type,
                error=str(final),
            )
            await self._refuse(delivery, final, f"failed: {type(final).__name__}: {final}")
            return None
        full = out_of_space(error)
        if full is not None:
            return await self._wait_for_room(delivery, full)
        self.failures += 1
        self._failing = True
        log.warning(
            "actor.handler_failed",
            actor=self.name,
            message_id=envelope.id,
            message_type=envelope.message_type,
            attempt=envelope.attempt,
            error=f"{type(error).__name__}: {error}",
        )
        assert self.instance is not None
        await self._run_hook("on_failure", self.instance.on_failure(error, envelope))
        exhausted = envelope.attempt >= self._policy.max_attempts
        if exhausted:
            reason = (
                f"handler failed {envelope.attempt} time(s); last error: "
                f"{type(error).__name__}: {error}"
            )
            await self.mailbox.nack(delivery, requeue=False, reason=reason)
            failure = HandlerFailedError(self.name, envelope.message_type, error)
            failure.__cause__ = error
            self._settle(envelope, error=failure)
        await self._restart(error, in_hand=None if exhausted else delivery)
        if exhausted:
            return None
        return Delivery(envelope.retried(), delivery.tag)

    async def _wait_for_room(self, delivery: Delivery, full: DiskFullFailure) -> Delivery:
        """A write failed for space: neither the message nor the actor is at fault. An asker
        hears it at once; the message keeps its attempt and is handled again, by a fresh
        instance, once a backoff has passed (README.md, "After a full disk or a damaged
        file"); no restart is spent, so a full disk cannot stop the actor."""
        envelope = delivery.envelope
        self._settle(envelope, error=full)
        delay = DISK_FULL_RETRY.delay(self._room_waits)
        if self._room_waits == 0:
            log.warning(
                "actor.waiting_for_disk",
                actor=self.name,
                message_id=envelope.id,
                message_type=envelope.message_type,
                error=str(full),
            )
        self._room_waits += 1
        self._failing = True
        self.stop_reason = f"waiting for disk space: {full}"  # shown by `status`
        if self.instance is not None:
            await self._run_hook("on_stop", self.instance.on_stop())
            self.instance = None
            self._dispatch.clear()
        while True:
            await self._policy.sleep(delay)
            try:
                self.instance = await self._start_instance()
            except Exception as exc:  # noqa: BLE001 - a failing on_start is a failure too
                if out_of_space(exc) is None:
                    await self._restart(exc, in_hand=delivery)
                    return delivery
                # Starting needs room as well (an agent opens its journal): wait more.
                delay = DISK_FULL_RETRY.delay(self._room_waits)
                self._room_waits += 1
                continue
            return delivery

    async def _restart(self, error: Exception, *, in_hand: Delivery | None) -> None:
        """Replace the actor instance after a backoff; past the intensity limit, after the
        cool-down (or stop it, when the policy has none)."""
        cooled = False  # a cool-down just ended: it is the restart's permission
        while True:
            if not cooled and not self._tracker.allow():
                spent = (
                    f"restart intensity exceeded ({self._policy.max_restarts} restarts in "
                    f"{self._policy.restart_window:g}s); "
                    f"last error: {type(error).__name__}: {error}"
                )
                if self._policy.cooldown > 0:
                    await self._cool_down(spent)
                    cooled = True
                    continue
                self.stop_reason = spent
                log.error("actor.stopped", actor=self.name, reason=self.stop_reason)
                if in_hand is not None:
                    await self.mailbox.nack(in_hand, requeue=False, reason=self.stop_reason)
                    self._settle(
                        in_hand.envelope, error=ActorDeadError(self.name, self.stop_reason)
                    )
                raise _StopActor
            delay = self._tracker.next_delay()
            self.state = ActorState.RESTARTING
            if self.instance is not None:
                await self._run_hook("on_stop", self.instance.on_stop())
                self.instance = None
                self._dispatch.clear()
            await self._policy.sleep(delay)
            try:
                self.instance = await self._start_instance()
            except Exception as exc:  # noqa: BLE001 - a failing on_start is one more failure
                error = exc
                cooled = False
                continue
            self.restarts += 1
            self.state = ActorState.RUNNING
            fields = {
                "actor": self.name,
                "restarts": self.restarts,
                "backoff_ms": round(delay * 1000, 3),
                "reason": f"{type(error).__name__}: {error}",
            }
            log.warning("actor.restarted", **fields)
            self._token_log.emit("actor.restarted", **fields)
            return

    async def _cool_down(self, spent: str) -> None:
        """Wait out the policy's cooldown with the instance stopped, then give the actor a
        whole restart budget again: in a long-lived process a failure that passes (an outage,
        a full disk) must not leave the actor dead for ever (docs/architecture.md, "runtime/").
        Its mailbox stays open meanwhile; messages wait there."""
        cooldown = self._policy.cooldown
        # Wall-clock time for people reading `status`; the wait itself is the policy's sleep.
        restart_at = datetime.now().astimezone() + timedelta(seconds=cooldown)
        self.state = ActorState.COOLING_DOWN
        self.stop_reason = f"cooling down until {restart_at:%H:%M:%S}: {spent}"
        log.error(
            "actor.cooling_down",
            actor=self.name,
            cooldown_s=cooldown,
            restart_at=restart_at.isoformat(timespec="seconds"),
            reason=spent,
        )
        if self.instance is not None:
            await self._run_hook("on_stop", self.instance.on_stop())
            self.instance = None
            self._dispatch.clear()
        await self._policy.sleep(cooldown)
        self._tracker.cooled_down()
        self.stop_reason = None

    def _settle(
        self, envelope: Envelope, *, value: Any = None, error: BaseException | None = None
    ) -> bool:
        """Answer the ask `envelope` carries; whether an asker is there to get the answer."""
        if envelope.correlation_id is None:
            return False
        pending = self.pending.pop(envelope.correlation_id, None)
        if pending is None:
            # Asked from another process; or the asker timed out and left, and the late
            # reply is dropped.
            if self._reply_elsewhere is not None:
                self._reply_elsewhere(envelope, value, error)
                return True
            return False
        if error is not None:
            pending.fail(error)
        else:
            pending.resolve(value)
        return True

    async def _refuse(self, delivery: Delivery, error: BatonError, reason: str) -> None:
        """Settle a message that no retry can help (see `_on_handler_error`). An asker gets
        the error and that is all: it is not a dead letter. A told message (or an ask whose
        asker has left) has no one to hear it, so the dead letters keep it with the reason."""
        if self._settle(delivery.envelope, error=error):
            log.info(
                "actor.request_refused",
                actor=self.name,
                message_id=delivery.envelope.id,
                message_type=delivery.envelope.message_type,
                reason=reason,
            )
            await self.mailbox.ack(delivery)
        else:
            await self.mailbox.nack(delivery, requeue=False, reason=reason)

    async def _run_hook(self, name: str, hook: Any) -> None:
        try:
            await hook
        except Exception as exc:  # noqa: BLE001 - a broken hook must not take the actor down
            log.error("actor.hook_failed", actor=self.name, hook=name, error=repr(exc))

    async def _finish(self) -> None:
        if self.state is not ActorState.FAILED:
            self.state = ActorState.STOPPING
        await self.mailbox.close()
        reason = self.stop_reason or "actor stopped before the message was handled"
        if self._keyed is not None and not self.mailbox.durable:
            # Taken from the mailbox, waiting behind their keys: in memory, nowhere else.
            # A durable mailbox still holds them, and delivers them on the next start.
            for envelope in self._keyed.leftovers():
                self._dead_letters.dead_letter(envelope, reason)
        for envelope in self.mailbox.drain_nowait():
            self._dead_letters.dead_letter(envelope, reason)
        dead = ActorDeadError(self.name, self.stop_reason or "stopped")
        for pending in self.pending.values():
            pending.fail(dead)
        self.pending.clear()
        if self.instance is not None:
            await self._run_hook("on_stop", self.instance.on_stop())
        if self.state is not ActorState.FAILED:
            self.state = ActorState.STOPPED
        self.done.set()
