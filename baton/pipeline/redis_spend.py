"""`SharedSpend`: each scenario run's spend and cap in Redis, shared by every process.

With a Redis mailbox a run's model calls are made by whichever process took its message
(`baton run --actors scheduler`, `baton worker`), so the spend cap must count all of them
(README.md, "Scaling out"). Keys, all under one hash tag so that one script may touch them on
Redis Cluster too (the prefix is "baton" by default):

- `{prefix:spend}:usd`: a hash, conversation → the known USD its calls cost;
- `{prefix:spend}:unknown`: a hash, conversation → how many calls had no price;
- `{prefix:spend}:cap`: a hash, conversation → the run's cap, set by the Scheduler's process;
- `{prefix:spend}:added`: the channel each addition is announced on, so the Scheduler's
  process shows what every process spent (`baton status`).

One script adds a call's cost and returns the run's totals in one step, so two processes
adding at once never lose one another's calls.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
from redis.exceptions import RedisError

from baton._log import get_logger
from baton.mailboxes.redis_client import RedisClient
from baton.pipeline.spend import RunSpend
from baton.runtime.backoff import Backoff

log = get_logger(__name__)

# KEYS: usd, unknown, channel; ARGV: conversation, cost ("" when unknown).
_ADD = """
local usd, unknown
if ARGV[2] == '' then
  unknown = redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
  usd = redis.call('HGET', KEYS[1], ARGV[1]) or '0'
else
  usd = redis.call('HINCRBYFLOAT', KEYS[1], ARGV[1], ARGV[2])
  unknown = redis.call('HGET', KEYS[2], ARGV[1]) or 0
end
redis.call('PUBLISH', KEYS[3], cjson.encode({ARGV[1], usd, tonumber(unknown)}))
return {usd, tonumber(unknown)}
"""
# KEYS: usd, unknown, cap; ARGV: conversation. A script, not MULTI: a cluster has no MULTI.
_READ = """
return {redis.call('HGET', KEYS[1], ARGV[1]), redis.call('HGET', KEYS[2], ARGV[1]),
        redis.call('HGET', KEYS[3], ARGV[1])}
"""
# How long the follower waits on the channel before asking again (not a poll: a blocking read).
_LISTEN = 5.0
# Between attempts to take the channel up again while Redis cannot be reached.
_RECONNECT = Backoff(initial=0.1, maximum=5.0)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _spend(usd: Any, unknown: Any) -> RunSpend:
    return RunSpend(float(_text(usd)) if usd else 0.0, int(unknown or 0))


class SharedSpend:
    """The runs' spend and caps in Redis (one client; the caller closes it)."""

    def __init__(self, client: RedisClient, *, prefix: str = "baton") -> None:
        self.client = client
        tag = f"{{{prefix}:spend}}"
        self.usd_key = f"{tag}:usd"
        self.unknown_key = f"{tag}:unknown"
        self.cap_key = f"{tag}:cap"
        self.channel = f"{tag}:added"
        self._add = client.register_script(_ADD)
        self._read = client.register_script(_READ)

    async def add(self, conversation: str, cost: float | None) -> RunSpend:
        """Count one call's cost (None: unknown) against its run; the run's totals after it."""
        keys = [self.usd_key, self.unknown_key, self.channel]
        usd, unknown = await self._add(keys=keys, args=[conversation, _cost_arg(cost)])
        return _spend(usd, unknown)

    async def read(self, conversation: str) -> tuple[RunSpend, float | None]:
        """What the run has spent, and its cap (None: none), read together."""
        keys = [self.usd_key, self.unknown_key, self.cap_key]
        usd, unknown, cap = await self._read(keys=keys, args=[conversation])
        return _spend(usd, unknown), None if cap is None else float(_text(cap))

    async def set_cap(self, conversation: str, cap: float | None) -> None:
        """The run's cap, for every process (None: none)."""
        if cap is None:
            await self.client.hdel(self.cap_key, conversation)
        else:
            await self.client.hset(self.cap_key, conversation, repr(float(cap)))

    async def load(self) -> dict[str, RunSpend]:
        """Every run's totals (read one hash after the other: they only grow, and a call
        counted in between is announced to `follow`)."""
        usd = await self.client.hgetall(self.usd_key)
        unknown = await self.client.hgetall(self.unknown_key)
        named_usd = {_text(name): value for name, value in usd.items()}
        named_unknown = {_text(name): value for name, value in unknown.items()}
        return {
            name: _spend(named_usd.get(name), named_unknown.get(name))
            for name in {*named_usd, *named_unknown}
        }

    async def follow(self, heard: Callable[[str, RunSpend], None]) -> None:
        """Tell `heard` every run's totals, then each new total any process adds, until
        cancelled. A connection lost is taken up again with every total read afresh: an
        announcement missed meanwhile is in them."""
        attempt = 0
        while True:
            try:
                async with self.client.pubsub() as pubsub:
                    await pubsub.subscribe(self.channel)
                    for conversation, spend in (await self.load()).items():
                        heard(conversation, spend)
                    attempt = 0
                    while True:
                        message = await pubsub.get_message(
                            ignore_subscribe_messages=True, timeout=_LISTEN
                        )
                        if message is not None and message.get("type") == "message":
                            _heard_message(message["data"], heard)
            except (RedisError, OSError) as exc:
                log.warning("spend.follow_lost", error=str(exc))
                await anyio.sleep(_RECONNECT.delay(attempt))
                attempt += 1


def _heard_message(data: bytes | str, heard: Callable[[str, RunSpend], None]) -> None:
    try:
        conversation, usd, unknown = json.loads(_text(data))
        heard(str(conversation), _spend(usd, unknown))
    except (ValueError, TypeError):
        log.warning("spend.bad_announcement", data=_text(data)[:200])


def _cost_arg(cost: float | None) -> str:
    return "" if cost is None else repr(float(cost))
