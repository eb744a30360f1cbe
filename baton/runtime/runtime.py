"""`Runtime`: owns the actors, their mailboxes and their supervision for one `async with`."""

from __future__ import annotations

import functools
import re
from asyncio import get_running_loop
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from anyio.abc import TaskGroup
from pydantic import BaseModel

from baton._log import get_logger
from baton.errors import ConfigError, UsageError
from baton.mailboxes.codec import EnvelopeCodec
from baton.mailboxes.envelope import Envelope, asked, new_id, told
from baton.mailboxes.errors import InvalidMessageError, MailboxBlockedError, MailboxClosedError
from baton.mailboxes.memory import MemoryMailbox
from baton.mailboxes.protocol import DeadLetterSink, Mailbox
from baton.mailboxes.sqlite import DATABASE, SqliteMailbox, SqliteStore
from baton.runtime._cell import EXPIRED, ActorCell, PendingAsk
from baton.runtime.actor import Actor
from baton.runtime.context_status import ContextProviders
from baton.runtime.dead_letters import DeadLetterLog
from baton.runtime.disk_writes import DISK_FULL_RETRY
from baton.runtime.errors import (
    ActorDeadError,
    ActorExistsError,
    AskTimeoutError,
    UnknownActorError,
)
from baton.runtime.ref import DEFAULT_ASK_TIMEOUT, ActorRef
from baton.runtime.settings import (
    KernelConfig,
    RedisConfig,
    is_redis_url,
    load_settings,
    redact_url,
)
from baton.runtime.supervision import SupervisorPolicy
from baton.runtime.token_log import TOKEN_LOG, TokenLog

if TYPE_CHECKING:
    from baton.runtime.distributed import Distributed
    from baton.runtime.token_relay import TokenRelay

log = get_logger(__name__)

A = TypeVar("A", bound=Actor)
# (actor name, capacity, dead-letter sink, codec for the actor's message types) -> its mailbox
MailboxFactory = Callable[[str, int, DeadLetterSink, EnvelopeCodec], Mailbox]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


def memory_mailboxes(
    name: str, capacity: int, dead_letters: DeadLetterSink, codec: EnvelopeCodec
) -> Mailbox:
    """In-process, bounded, not durable: messages are plain objects and need no codec."""
    return MemoryMailbox(name, capacity=capacity, dead_letters=dead_letters)


def sqlite_mailboxes(store: SqliteStore, max_attempts: int) -> MailboxFactory:
    """Durable mailboxes in `store`: a message outlives the process until it is acked."""

    def make(
        name: str, capacity: int, dead_letters: DeadLetterSink, codec: EnvelopeCodec
    ) -> Mailbox:
        return SqliteMailbox(
            name,
            store,
            codec,
            capacity=capacity,
            max_attempts=max_attempts,
            dead_letters=dead_letters,
        )

    return make


def _token_relay(
    distributed: Distributed, settings: RedisConfig
) -> AbstractAsyncContextManager[TokenRelay]:
    """The token log's copy in Redis (docs/token-log.md, "Across processes"), over the
    backend's client; imported only here, as the Redis backend is."""
    from baton.runtime.token_relay import TokenRelay  # noqa: PLC0415

    return TokenRelay.open(distributed.client, distributed.url, settings)


def _redis_backend(mailbox: str) -> type[Distributed]:
    """The Redis backend; a one-line `ConfigError` naming the extra when redis-py is missing."""
    try:
        # Imported here: `import baton` and the other backends work without redis-py, which
        # is the optional `redis` extra.
        from baton.runtime.distributed import Distributed  # noqa: PLC0415
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] != "redis":
            raise
        raise ConfigError(
            f"mailbox {redact_url(mailbox)} needs the Redis client, which is not installed: "
            "pip install 'baton[redis]'"
        ) from None
    return Distributed


@dataclass(frozen=True, slots=True)
class ActorStatus:
    """A snapshot of one actor for status displays."""

    name: str
    actor_type: str
    state: str
    mailbox_depth: int
    mailbox_capacity: int
    handled: int
    failures: int
    restarts: int
    stop_reason: str | None
    busy: bool = False
    # The keys a keyed actor's handlers work on now (docs/architecture.md, "Keyed actors").
    working_on: tuple[str, ...] = ()


class Runtime:
    """The registry and supervisor of a set of actors; open it with `Runtime.open()`."""

    def __init__(
        self,
        task_group: TaskGroup,
        *,
        workspace: Path | None,
        config: KernelConfig,
        token_log: TokenLog,
        policy: SupervisorPolicy,
        mailbox_factory: MailboxFactory,
        mailbox_capacity: int,
        shutdown_timeout: float,
        distributed: Distributed | None = None,
    ) -> None:
        self.workspace = workspace
        # Set when mailboxes live in Redis and other processes may run the same actors.
        self.distributed = distributed
        self.config = config
        self.token_log = token_log
        self.policy = policy
        self.dead_letters = DeadLetterLog(
            token_log=token_log,
            keep=config.runtime.dead_letter_max,
            max_age=config.runtime.dead_letter_days * 86_400,
        )
        # Lines for the process to show at start (lost messages: README.md, "After a full
        # disk or a damaged file").
        self.warnings: list[str] = []
        self.context_providers = ContextProviders()  # filled by agent actors, read by status
        self._tg = task_group
        self._cells: dict[str, ActorCell] = {}
        self._types: dict[str, type[Actor]] = {}
        self._mailbox_factory = mailbox_factory
        self._mailbox_capacity = mailbox_capacity
        self._shutdown_timeout = shutdown_timeout
        self._closing = False
        self._gate: anyio.Event | None = None

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        workspace: str | Path | None = None,
        *,
        config: KernelConfig | None = None,
        policy: SupervisorPolicy | None = None,
        mailbox_factory: MailboxFactory | None = None,
        mailbox_capacity: int | None = None,
        shutdown_timeout: float | None = None,
        token_log_file: bool = True,
    ) -> AsyncIterator[Runtime]:
        """Run actors for the duration of the block; on exit drain them, then stop them.

        With a `workspace`, its `baton.toml` is loaded (unless `config` is given), the token
        log is written to `<workspace>/.baton/logs/tokens.jsonl` and mailboxes follow
        `runtime.mailbox` (sqlite by default, in `<workspace>/.baton/mailboxes.sqlite3`).
        Without one, mailboxes live in memory. Explicit keyword arguments win over the
        configuration. `token_log_file=False` keeps no token-log file: with a Redis mailbox
        the lines go to its stream alone (a worker that writes nothing in its folder:
        docs/storage.md, "A worker's own directory").
        """
        root = Path(await anyio.Path(workspace).resolve()) if workspace is not None else None
        if config is None:
            config = await anyio.to_thread.run_sync(load_settings, root)
        settings = config.runtime
        supervision = settings.supervision
        token_path = root / TOKEN_LOG if root is not None and token_log_file else None
        attempts = policy.max_attempts if policy is not None else supervision.max_attempts
        async with AsyncExitStack() as backends:
            distributed: Distributed | None = None
            relay: TokenRelay | None = None  # every process's token-log lines in Redis
            store: SqliteStore | None = None
            if mailbox_factory is None and is_redis_url(settings.mailbox):
                distributed = await backends.enter_async_context(
                    _redis_backend(settings.mailbox).open(
                        settings.mailbox, settings.redis, max_attempts=attempts
                    )
                )
                mailbox_factory = distributed.mailbox
                relay = await backends.enter_async_context(
                    _token_relay(distributed, settings.redis)
                )
            elif mailbox_factory is None and root is not None and settings.mailbox == "sqlite":
                store = await backends.enter_async_context(
                    SqliteStore.open(
                        root / DATABASE,
                        dead_letter_max=settings.dead_letter_max,
                        dead_letter_age=settings.dead_letter_days * 86_400,
                        retry=DISK_FULL_RETRY,
                    )
                )
                mailbox_factory = sqlite_mailboxes(store, attempts)
            async with (
                TokenLog.open(
                    token_path,
                    max_bytes=config.logs.token_log_max_bytes,
                    backups=config.logs.token_log_backups,
                    process=distributed.consumer if distributed is not None else None,
                    relay=relay,
                ) as token_log,
                anyio.create_task_group() as tg,
            ):
                runtime = cls(
                    tg,
                    workspace=root,
                    config=config,
                    token_log=token_log,
                    # `[runtime.supervision]`'s keys are SupervisorPolicy's own field names.
                    policy=policy or SupervisorPolicy(**supervision.model_dump()),
                    mailbox_factory=mailbox_factory or memory_mailboxes,
                    mailbox_capacity=mailbox_capacity or settings.mailbox_capacity,
                    shutdown_timeout=(
                        settings.shutdown_timeout if shutdown_timeout is None else shutdown_timeout
                    ),
                    distributed=distributed,
                )
                if store is not None:
                    runtime.warnings.extend(store.warnings)
                try:
                    yield runtime
                finally:
                    with anyio.CancelScope(shield=True):
                        await runtime.shutdown()

    # --- lifecycle -------------------------------------------------------------------------

    async def spawn(
        self,
        name: str,
        actor_type: type[A],
        *args: Any,
        mailbox_capacity: int | None = None,
        **kwargs: Any,
    ) -> ActorRef:
        """Start an actor under `name`; returns once its `on_start` has completed."""
        if self._closing:
            raise UsageError("the runtime is shutting down; it starts no new actors")
        if not _NAME.match(name):
            raise UsageError(
                f"invalid actor name {name!r}: use 1-128 letters, digits, '_', '-', '.', ':'"
            )
        existing = self._cells.get(name)
        if existing is not None and existing.alive:
            raise ActorExistsError(name)
        ref = ActorRef(name, self)
        capacity = mailbox_capacity or self._mailbox_capacity
        mailbox = self._mailbox_factory(
            name, capacity, self.dead_letters, EnvelopeCodec(actor_type.actor_message_types())
        )
        distributed = self.distributed
        cell = ActorCell(
            name,
            functools.partial(actor_type, *args, **kwargs),
            mailbox,
            ref=ref,
            policy=self.policy,
            dead_letters=self.dead_letters,
            token_log=self.token_log,
            reply_elsewhere=distributed.reply if distributed is not None else None,
            gate=self._gate,
        )
        self._cells[name] = cell
        self._types[name] = actor_type
        try:
            await self._tg.start(cell.run)
        except BaseException:
            self._cells.pop(name, None)
            raise
        if distributed is not None:
            await distributed.register(name, actor_type, capacity)
        log.info("actor.started", actor=name, actor_type=actor_type.__name__)
        return ref

    @asynccontextmanager
    async def starting_together(self) -> AsyncIterator[None]:
        """Actors spawned inside the block start (`on_start` runs) but handle no message
        until the block ends, so none of them tells another before that one is registered:
        messages left from a previous run are redelivered at once (docs/architecture.md,
        "Starting together")."""
        if self._gate is not None:
            raise UsageError("starting_together() blocks do not nest")
        gate = self._gate = anyio.Event()
        try:
            yield
        finally:
            self._gate = None
            gate.set()

    async def stop(self, name: str, *, timeout: float | None = None) -> None:
        """Stop one actor: let it drain its mailbox until `timeout`, then cancel it."""
        cell = self._cell(name)
        await self._stop_cells([cell], self._shutdown_timeout if timeout is None else timeout)

    def hurry(self, timeout: float) -> None:
        """Drain for at most `timeout` seconds when the block ends, instead of
        `shutdown_timeout`: a process asked to stop now cancels what its actors wait for
        (their journals make that safe) rather than let them run to the deadline."""
        self._shutdown_timeout = min(self._shutdown_timeout, timeout)

    async def shutdown(self) -> None:
        """Drain every actor's mailbox up to the shutdown deadline, then cancel and stop all."""
        self._closing = True
        await self._stop_cells(list(self._cells.values()), self._shutdown_timeout)

    async def _stop_cells(self, cells: list[ActorCell], timeout: float) -> None:
        for cell in cells:
            cell.request_stop()
            await cell.mailbox.close()
        with anyio.move_on_after(timeout):
            for cell in cells:
                await cell.done.wait()
        for cell in cells:
            if not cell.done.is_set():
                log.warning("actor.drain_timeout", actor=cell.name, timeout_s=timeout)
                cell.cancel()
        for cell in cells:
            await cell.done.wait()

    # --- lookup ------------------------------------------------------------------------------

    def lookup(self, name: str) -> ActorRef:
        """The ref of a registered actor; `UnknownActorError` if there is none."""
        return self._cell(name).ref

    def is_alive(self, name: str) -> bool:
        cell = self._cells.get(name)
        return cell is not None and cell.alive

    async def wait_stopped(self, name: str) -> None:
        """Return once the actor `name` has stopped (at once if it already has)."""
        await self._cell(name).done.wait()

    def names(self) -> list[str]:
        return list(self._cells)

    def actor_types(self) -> dict[str, type[Actor]]:
        """The class of every actor spawned here, by name: what each one accepts."""
        return dict(self._types)

    def status(self) -> list[ActorStatus]:
        """A snapshot of every registered actor."""
        return [
            ActorStatus(
                name=cell.name,
                actor_type=self._types[cell.name].__name__,
                state=cell.state.value,
                mailbox_depth=cell.depth(),
                mailbox_capacity=cell.mailbox.capacity,
                handled=cell.handled,
                failures=cell.failures,
                restarts=cell.restarts,
                stop_reason=cell.stop_reason,
                busy=cell.busy,
                working_on=tuple(cell.working_on()),
            )
            for cell in self._cells.values()
        ]

    def message_type(self, name: str, type_name: str) -> type[BaseModel]:
        """Resolve a message type by name for actor `name` (messages that arrive as JSON)."""
        return _message_type(name, self._types[self._cell(name).name], type_name)

    async def resolve_message_type(self, name: str, type_name: str) -> type[BaseModel]:
        """`message_type`, also for an actor that only another process runs (distributed)."""
        if name in self._cells or self.distributed is None:
            return self.message_type(name, type_name)
        return _message_type(name, await self.distributed.actor_type(name), type_name)

    def _cell(self, name: str) -> ActorCell:
        cell = self._cells.get(name)
        if cell is None:
            raise UnknownActorError(name, list(self._cells))
        return cell

    # --- messaging ---------------------------------------------------------------------------

    async def tell(self, name: str, message: Any, *, sender: str | None = None) -> None:
        """Queue `message` for actor `name`; waits only while its mailbox is full."""
        cell = self._cells.get(name)
        if cell is None and self.distributed is not None:
            await self.distributed.send(name, Envelope(name, message, sender))
            return
        cell = cell or self._cell(name)
        envelope = told(name, message, sender)
        try:
            try:
                cell.mailbox.send_nowait(envelope)
            except MailboxBlockedError:
                await cell.mailbox.send(envelope)
        except MailboxClosedError:
            raise ActorDeadError(name, cell.stop_reason or cell.state.value) from None

    def tell_nowait(self, name: str, message: Any, *, sender: str | None = None) -> None:
        """Queue `message` without waiting; `MailboxFullError` when the mailbox is full,
        `MailboxBlockedError` when it is durable (then `await tell()`)."""
        cell = self._cells.get(name)
        if cell is None:
            if self.distributed is not None:
                raise MailboxBlockedError(f"{name!r} runs in another process: await tell()")
            cell = self._cell(name)  # raises UnknownActorError
        try:
            cell.mailbox.send_nowait(told(name, message, sender))
        except MailboxClosedError:
            raise ActorDeadError(name, cell.stop_reason or cell.state.value) from None

    async def ask(
        self,
        name: str,
        message: Any,
        *,
        timeout: float | None = DEFAULT_ASK_TIMEOUT,
        sender: str | None = None,
    ) -> Any:
        """Send `message` and wait for the handler's result (or its error) up to `timeout`.

        In a distributed runtime the handler may run in another process: its reply then
        arrives as JSON (a pydantic model as its dict)."""
        cell = self._cells.get(name)
        distributed = self.distributed
        if cell is None and distributed is None:
            cell = self._cell(name)  # raises UnknownActorError
        correlation_id = new_id()
        loop = get_running_loop()
        pending = PendingAsk(loop.create_future())
        if cell is not None:
            cell.pending[correlation_id] = pending
        reply_to = sender or "ask"
        if distributed is not None:
            distributed.waiting[correlation_id] = pending
            reply_to = distributed.reply_to
        envelope = asked(name, message, sender, correlation_id, reply_to)
        try:
            if timeout is None:
                # No deadline, no cancel scope: it was a third of an ask's cost.
                await self._send(cell, name, envelope)
                await pending.waiter
            elif timeout > 0 and cell is not None and _sent_nowait(cell.mailbox, envelope):
                # The message is in the mailbox and only the reply is awaited: a timer that
                # settles the ask at its deadline does what a cancel scope would, at a third
                # of the cost (`bench/mailbox.py`, `ask-out`).
                timer = loop.call_later(timeout, pending.expire)
                try:
                    await pending.waiter
                finally:
                    timer.cancel()
            else:
                # The send may wait for room (a full or durable mailbox, another process):
                # the deadline must cover that wait too.
                with anyio.move_on_after(timeout) as scope:
                    await self._send(cell, name, envelope)
                    await pending.waiter
                if scope.cancelled_caught and not pending.settled:
                    raise AskTimeoutError(name, timeout)
        except MailboxClosedError:
            assert cell is not None
            raise ActorDeadError(name, cell.stop_reason or cell.state.value) from None
        finally:
            # Removing the entry is what makes a late reply a no-op instead of a leak.
            if cell is not None:
                cell.pending.pop(correlation_id, None)
            if distributed is not None:
                distributed.waiting.pop(correlation_id, None)
        result = pending.outcome()
        if result is EXPIRED:
            assert timeout is not None
            raise AskTimeoutError(name, timeout)
        return result

    async def _send(self, cell: ActorCell | None, name: str, envelope: Envelope) -> None:
        if cell is None:
            assert self.distributed is not None
            await self.distributed.send(name, envelope)
        elif not _sent_nowait(cell.mailbox, envelope):
            await cell.mailbox.send(envelope)


def _sent_nowait(mailbox: Mailbox, envelope: Envelope) -> bool:
    """Whether `envelope` went into `mailbox` without waiting (False: `await send()` it)."""
    try:
        mailbox.send_nowait(envelope)
    except MailboxBlockedError:
        return False
    return True


def _message_type(name: str, actor_type: type[Actor], type_name: str) -> type[BaseModel]:
    types = actor_type.actor_message_types()
    found = types.get(type_name)
    if found is None or not issubclass(found, BaseModel):
        known = ", ".join(sorted(types)) or "none"
        raise InvalidMessageError(
            f"actor {name!r} accepts no message type {type_name!r}; it accepts: {known}"
        )
    return found
