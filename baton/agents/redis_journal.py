"""`RedisJournalStore`: journals in Redis, shared by every worker of an actor.

When several workers (processes, possibly on several machines) consume one actor's Redis
mailbox, whichever of them handles a conversation's message must see that conversation's
whole journal, and no two of them may append to it at once. Keys (the prefix is "baton" by
default); each carries the actor's hash tag `{<actor>}`, the one its mailbox's keys carry, so
on a Redis Cluster the append script's three keys share a slot (a single server ignores the
braces):

- `<prefix>:journal:{<actor>}:<conversation>`: a list, one compact JSON record per element.
- `<prefix>:journals:{<actor>}`: the set of the actor's conversation ids.
- `<prefix>:lease:{<actor>}:<conversation>`: the lease, a token naming one hold (the owner
  plus random hex), expiring after `lease_ttl` unless its holder renews it.

A worker holds a conversation (`hold`) while it works on it. The lease alone is not enough:
a worker paused past its lease (a GC pause, a stopped VM, a slow network) wakes up believing
it still holds the conversation while another worker has taken it over. So every append is
fenced: one script checks that the lease still carries this hold's token and only then
writes, and a worker that lost its lease gets `LeaseLostError` instead of interleaving its
records with the new holder's.

The journal is as durable as the Redis server's persistence: run it with `appendonly yes`,
and with `appendfsync always` if a journaled step must survive a crash of Redis itself too.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from redis.exceptions import RedisError

from baton._log import get_logger
from baton.agents.errors import JournalCorruptError, LeaseLostError
from baton.agents.journal import _check_name
from baton.mailboxes.redis_client import RedisClient, slot_tag
from baton.runtime.backoff import Backoff

log = get_logger(__name__)

# Compare-and-act: after a pause, plain PEXPIRE or DEL could extend or free a lease that
# another worker has taken since.
_RENEW = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])
"""
# KEYS: lease, journal, conversation set; ARGV: token, record JSON, conversation.
_APPEND = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[3], ARGV[3])
return 1
"""
_FIRST_BACKOFF = 0.02
_MAX_BACKOFF = 0.5


@dataclass
class _Lease:
    token: str
    depth: int = 0
    idle: anyio.Event = field(default_factory=anyio.Event)


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


class RedisJournalStore:
    """Journals in Redis; a conversation is appended to only under its lease (`hold`)."""

    shared = True

    def __init__(
        self, client: RedisClient, *, owner: str, prefix: str = "baton", lease_ttl: float = 15.0
    ) -> None:
        if not lease_ttl > 0:
            raise ValueError(f"lease_ttl must be positive, got {lease_ttl!r}")
        self._client = client
        self.owner = owner
        self.prefix = prefix
        self.lease_ttl = lease_ttl
        self._ttl_ms = max(1, round(lease_ttl * 1000))
        self._backoff = Backoff(_FIRST_BACKOFF, maximum=min(lease_ttl / 4, _MAX_BACKOFF), jitter=0)
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)
        self._append = client.register_script(_APPEND)
        self._held: dict[str, _Lease] = {}

    def _key(self, kind: str, actor: str, conversation: str) -> str:
        actor, conversation = _check_name("actor", actor), _check_name("conversation", conversation)
        return f"{self.prefix}:{kind}:{slot_tag(actor)}:{conversation}"

    def hold(self, actor: str, conversation: str) -> AbstractAsyncContextManager[None]:
        """Own the conversation for the block, waiting as long as another worker holds it.

        Holds nest per store object: a hold on a conversation this store already holds just
        joins it, and the lease is released once the last of them has exited."""
        return self._hold(actor, conversation, self._key("lease", actor, conversation))

    @asynccontextmanager
    async def _hold(self, actor: str, conversation: str, key: str) -> AsyncIterator[None]:
        lease = await self._acquire(actor, conversation, key)
        lease.depth += 1
        if lease.depth > 1:
            try:
                yield
            finally:
                lease.depth -= 1
                if lease.depth == 1:
                    lease.idle.set()
            return
        failure: BaseException | None = None
        try:
            async with anyio.create_task_group() as renewals:
                renewals.start_soon(self._keep, actor, conversation, key, lease.token)
                try:
                    yield
                    # Another task of this store may still be inside a hold that joined ours.
                    while lease.depth > 1:
                        lease.idle = anyio.Event()
                        await lease.idle.wait()
                except BaseException as error:  # noqa: BLE001 - re-raised below
                    # Out of the task group, or it would reach the caller in an ExceptionGroup.
                    failure = error
                finally:
                    renewals.cancel_scope.cancel()
            if failure is not None:
                raise failure
        finally:
            lease.depth = 0
            if self._held.get(key) is lease:
                del self._held[key]
            # Bounded: past the TTL the lease has expired by itself, and the release must not
            # hang the exit of a cancelled caller on an unreachable server.
            with anyio.move_on_after(self.lease_ttl, shield=True):
                try:
                    await self._release(keys=[key], args=[lease.token])
                except RedisError as error:
                    log.warning("journal.lease_release_failed", key=key, error=str(error))

    async def _acquire(self, actor: str, conversation: str, key: str) -> _Lease:
        token = f"{self.owner}:{secrets.token_hex(8)}"
        attempt, waited = 0, False
        while True:
            if (lease := self._held.get(key)) is not None:
                return lease  # another task of this store got it meanwhile: join that hold
            # Shielded: a SET that reached the server before a cancellation would otherwise
            # leave a lease nobody releases, locking the conversation out for a whole TTL.
            acquired = None
            with anyio.move_on_after(self.lease_ttl, shield=True):
                acquired = await self._client.set(key, token, nx=True, px=self._ttl_ms)
            if acquired:
                lease = self._held[key] = _Lease(token)
                return lease
            if not waited:
                log.info("journal.lease_waiting", actor=actor, conversation=conversation)
                waited = True
            await anyio.sleep(self._backoff.delay(attempt))
            attempt += 1

    async def _keep(self, actor: str, conversation: str, key: str, token: str) -> None:
        while True:
            await anyio.sleep(self.lease_ttl / 3)
            try:
                renewed = await self._renew(keys=[key], args=[token, self._ttl_ms])
            except RedisError as error:
                # The next tick tries again; if the lease expires meanwhile, appends are fenced.
                log.warning("journal.lease_renew_failed", key=key, error=str(error))
                continue
            if not renewed:
                log.error("journal.lease_lost", actor=actor, conversation=conversation)
                return

    async def length(self, actor: str, conversation: str) -> int:
        length: int = await self._client.llen(self._key("journal", actor, conversation))
        return length

    async def append(self, actor: str, conversation: str, record: Mapping[str, Any]) -> None:
        lease_key = self._key("lease", actor, conversation)
        body = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        lease = self._held.get(lease_key)
        if lease is None:
            raise LeaseLostError(actor, conversation)
        keys = [lease_key, self._key("journal", actor, conversation), self._set_key(actor)]
        if not await self._append(keys=keys, args=[lease.token, body, conversation]):
            raise LeaseLostError(actor, conversation)

    async def read(self, actor: str, conversation: str) -> list[dict[str, Any]]:
        key = self._key("journal", actor, conversation)
        records: list[dict[str, Any]] = []
        for number, element in enumerate(await self._client.lrange(key, 0, -1), start=1):
            try:
                record = json.loads(element)
            except ValueError:
                raise self.damaged(actor, conversation, number, "the element is not JSON") from None
            if not isinstance(record, dict):
                raise self.damaged(actor, conversation, number, "the element is not a JSON object")
            records.append(record)
        return records

    def damaged(
        self, actor: str, conversation: str, line: int, problem: str
    ) -> JournalCorruptError:
        """The error naming the journal's key; `line` counts the list's elements from 1."""
        key = self._key("journal", actor, conversation)
        fix = (
            f"rename the key aside (e.g. `redis-cli RENAME {key} {key}.damaged`) so that "
            "conversation starts afresh, or restore it from a backup"
        )
        return JournalCorruptError(
            f"redis key {key}",
            line,
            actor=actor,
            conversation=conversation,
            problem=problem,
            fix=fix,
        )

    async def conversations(self, actor: str) -> list[str]:
        return sorted(_text(m) for m in await self._client.smembers(self._set_key(actor)))

    def _set_key(self, actor: str) -> str:
        return f"{self.prefix}:journals:{slot_tag(_check_name('actor', actor))}"
