"""One runtime spread over processes: mailboxes, the actor registry and ask replies in Redis.

With `runtime.mailbox = "redis://HOST:PORT/DB"` every process (`baton run`, `baton worker`)
opens a `Distributed`. Each actor's mailbox is a Redis stream read by a consumer group named
after the actor, so every process that spawns `execute` adds a consumer to the same queue.
This object also carries what crossing processes needs besides the mailboxes:

- the registry `{prefix}:actors` (name → type and capacity), so a `tell` to an actor spawned
  only in another process is sent to its stream, and a tell to a name nobody spawned is
  refused with `UnknownActorError` instead of waiting in a stream for ever;
- ask replies: an ask carries this process's reply stream as `reply_to`; whichever process
  handles it sends the outcome (value, or the error as the control API encodes it) there;
- the heartbeat: every third of `claim_idle` each mailbox renews the entries it holds, so
  only a dead (or stalled) process's messages are taken over by the others.

Journals live in the same Redis (see `baton.agents.redis_journal`), so whichever process
handles a conversation's message sees the whole conversation.

The URL may name one node of a Redis Cluster: `open` then talks to the whole cluster
(`baton.mailboxes.redis_client`). The registry and each reply stream are one key each; an
actor's own keys share its hash slot.
"""

from __future__ import annotations

import importlib
import json
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from pydantic import TypeAdapter
from redis.asyncio import Redis
from redis.exceptions import RedisClusterException, RedisError

from baton._log import get_logger
from baton.errors import BatonError, RuntimeFailure
from baton.mailboxes.codec import EnvelopeCodec
from baton.mailboxes.envelope import Envelope, new_id
from baton.mailboxes.errors import InvalidMessageError
from baton.mailboxes.protocol import DeadLetterSink, Mailbox
from baton.mailboxes.redis import RedisMailbox
from baton.mailboxes.redis_client import RedisClient, connect
from baton.runtime._cell import PendingAsk
from baton.runtime._error_wire import error_body, rebuild_error, status_for
from baton.runtime._redis_upgrade import rename_untagged_keys
from baton.runtime.actor import Actor
from baton.runtime.errors import UnknownActorError
from baton.runtime.settings import RedisConfig

log = get_logger(__name__)

# XREADGROUP blocks at most this long server-side; the socket timeout must exceed it.
_BLOCK = 1.0
_SOCKET_TIMEOUT = 30.0
# A reply stream outlives its process only this long (a dead asker's replies are litter).
_REPLY_TTL = 3600
_REPLY_MAXLEN = 10_000
_DRAIN = 5.0
_JSON = TypeAdapter(Any)


def consumer_name() -> str:
    """A name among consumers: host and pid for people, and an id unique to this runtime."""
    return f"{socket.gethostname()}:{os.getpid()}:{new_id()}"


def _unreachable(url: str, error: BaseException) -> RuntimeFailure:
    return RuntimeFailure(
        f"cannot reach Redis at {url} ({error}): start redis-server there, or set "
        "runtime.mailbox to sqlite"
    )


class Distributed:
    """The Redis side of one process's runtime; open it with `Distributed.open`."""

    def __init__(
        self, client: RedisClient, *, url: str, settings: RedisConfig, max_attempts: int
    ) -> None:
        self.client = client
        self.url = url
        self.settings = settings
        self.consumer = consumer_name()
        self.reply_to = f"{settings.prefix}:reply:{self.consumer}"
        # Asks of this process waiting for a reply from another, by correlation id.
        self.waiting: dict[str, PendingAsk] = {}
        self._max_attempts = max_attempts
        self._registry = f"{settings.prefix}:actors"
        self._mailboxes: list[RedisMailbox] = []
        self._remote: dict[str, RedisMailbox] = {}
        self._outgoing: MemoryObjectSendStream[tuple[str, str]]
        self._pending_out: MemoryObjectReceiveStream[tuple[str, str]]
        self._outgoing, self._pending_out = anyio.create_memory_object_stream(float("inf"))

    @classmethod
    @asynccontextmanager
    async def open(
        cls, url: str, settings: RedisConfig, *, max_attempts: int
    ) -> AsyncIterator[Distributed]:
        """Connect (failing at once, with the URL, when Redis cannot be reached) and run the
        heartbeat and the reply streams for the block."""
        try:
            client = await connect(url, socket_timeout=_SOCKET_TIMEOUT)
        except (RedisError, RedisClusterException, OSError) as exc:
            raise _unreachable(url, exc) from None
        try:
            if isinstance(client, Redis):  # a cluster never held keys without hash tags
                await rename_untagged_keys(client, settings.prefix)
        except (RedisError, OSError) as exc:
            await client.aclose()
            raise _unreachable(url, exc) from None
        backend = cls(client, url=url, settings=settings, max_attempts=max_attempts)
        try:
            async with anyio.create_task_group() as sending:
                sending.start_soon(backend._send_replies)
                async with anyio.create_task_group() as loops:
                    loops.start_soon(backend._heartbeat)
                    loops.start_soon(backend._read_replies)
                    try:
                        yield backend
                    finally:
                        loops.cancel_scope.cancel()
                        # Replies of the runtime's last handlers still go out, for a while.
                        backend._outgoing.close()
                        sending.cancel_scope.deadline = anyio.current_time() + _DRAIN
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await client.delete(backend.reply_to)
                finally:
                    await client.aclose()

    # --- mailboxes ---------------------------------------------------------------------------

    def mailbox(
        self, name: str, capacity: int, dead_letters: DeadLetterSink, codec: EnvelopeCodec
    ) -> Mailbox:
        """The `MailboxFactory` of a distributed runtime: this process joins `name`'s group."""
        box = self._new_mailbox(name, capacity, dead_letters, codec)
        self._mailboxes.append(box)
        return box

    def _new_mailbox(
        self,
        name: str,
        capacity: int,
        dead_letters: DeadLetterSink | None,
        codec: EnvelopeCodec,
    ) -> RedisMailbox:
        return RedisMailbox(
            name,
            client=self.client,
            codec=codec,
            capacity=capacity,
            dead_letters=dead_letters,
            consumer=self.consumer,
            max_attempts=self._max_attempts,
            claim_idle=self.settings.claim_idle,
            prefix=self.settings.prefix,
            # One at a time: a message read ahead here is one no idle worker can take.
            read_batch=1,
            block=_BLOCK,
        )

    async def register(self, name: str, actor_type: type[Actor], capacity: int) -> None:
        """Announce that `name` has consumers, so other processes can tell it."""
        entry = {
            "type": actor_type.__name__,
            "class": f"{actor_type.__module__}:{actor_type.__qualname__}",
            "capacity": capacity,
        }
        await self.client.hset(self._registry, name, json.dumps(entry))

    async def _entry(self, name: str) -> dict[str, Any]:
        entry = await self.client.hget(self._registry, name)
        if entry is None:
            known = sorted(
                k.decode() if isinstance(k, bytes) else str(k)
                for k in await self.client.hkeys(self._registry)
            )
            raise UnknownActorError(name, known)
        found: dict[str, Any] = json.loads(entry)
        return found

    async def actor_type(self, name: str) -> type[Actor]:
        """The class another process runs `name` as, to build messages for it by type name
        (the control API's tell and ask); it must be importable here too."""
        path = str((await self._entry(name)).get("class", ""))
        module, _, qualname = path.partition(":")
        try:
            found: Any = importlib.import_module(module)
            for part in qualname.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError, ValueError) as exc:
            raise InvalidMessageError(
                f"actor {name!r} runs in another process as {path}, which this process cannot "
                f"import ({exc}): send it from code that can"
            ) from None
        if not (isinstance(found, type) and issubclass(found, Actor)):
            raise InvalidMessageError(f"actor {name!r} is registered as {path}, not an Actor")
        return found

    async def send(self, name: str, envelope: Envelope) -> None:
        """Send to an actor this process does not run; `UnknownActorError` if none does."""
        box = self._remote.get(name)
        if box is None:
            capacity = int((await self._entry(name))["capacity"])
            # Send-only: encoding needs no types, and it never joins the actor's group.
            box = self._new_mailbox(name, capacity, None, EnvelopeCodec({}))
            self._remote[name] = box
        await box.send(envelope)

    async def _heartbeat(self) -> None:
        while True:
            await anyio.sleep(self.settings.claim_idle / 3)
            for box in list(self._mailboxes):
                try:
                    await box.keep_alive()
                except (RedisError, OSError) as exc:
                    log.warning("mailbox.heartbeat_failed", mailbox=box.name, error=str(exc))

    # --- ask replies ---------------------------------------------------------------------------

    def reply(self, envelope: Envelope, value: Any, error: BaseException | None) -> None:
        """Send an ask's outcome to the asking process (called where the ask was handled)."""
        if envelope.reply_to is None or envelope.reply_to == self.reply_to:
            return  # asked here: the local settle already answered (or the asker left)
        if not envelope.reply_to.startswith(f"{self.settings.prefix}:reply:"):
            return
        body: dict[str, Any] = {"id": envelope.correlation_id}
        if isinstance(error, BatonError):
            body["status"] = status_for(error)
            body["error"] = error_body(error).model_dump(mode="json")
        elif error is not None:
            body["status"] = 500
            body["error"] = {"error": {"type": type(error).__name__, "message": str(error)}}
        else:
            body["value"] = _JSON.dump_python(value, mode="json")
        self._outgoing.send_nowait((envelope.reply_to, json.dumps(body, ensure_ascii=False)))

    async def _send_replies(self) -> None:
        async with self._pending_out:
            async for stream, body in self._pending_out:
                try:
                    async with self.client.pipeline(transaction=False) as pipe:
                        pipe.xadd(stream, {"r": body}, maxlen=_REPLY_MAXLEN, approximate=True)
                        pipe.expire(stream, _REPLY_TTL)
                        await pipe.execute()
                except (RedisError, OSError) as exc:
                    log.warning("ask.reply_lost", stream=stream, error=str(exc))

    async def _read_replies(self) -> None:
        last = "$"
        while True:
            try:
                reply: Any = await self.client.xread(
                    {self.reply_to: last}, block=int(_BLOCK * 1000), count=100
                )
            except (RedisError, OSError) as exc:
                log.warning("ask.reply_read_failed", error=str(exc))
                await anyio.sleep(_BLOCK)
                continue
            for _, entries in reply or ():
                for entry_id, fields in entries:
                    last = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
                    self._settle(fields.get(b"r") or fields.get("r"))

    def _settle(self, raw: bytes | str | None) -> None:
        try:
            body = json.loads(raw or "")
            pending = self.waiting.pop(str(body["id"]), None)
        except (ValueError, KeyError, TypeError):
            log.warning("ask.reply_unreadable", body=repr(raw)[:200])
            return
        if pending is None:
            return  # the asker timed out and left
        if "error" in body:
            pending.fail(rebuild_error(int(body.get("status", 500)), body["error"]))
        else:
            pending.resolve(body.get("value"))
