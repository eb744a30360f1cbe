"""Redis's side of `RedisMailbox`: the Lua scripts it runs, how they are run, and readers for
what they (and XREADGROUP) reply. See `baton.mailboxes._redis_stream` for the keys they touch.

Each script is a single atomic step on the server and a single command on the wire.
"""

from __future__ import annotations

import hashlib
from typing import Any

from redis.exceptions import NoScriptError

from baton.mailboxes.redis_client import RedisClient


class Script:
    """One Lua script, run by its SHA and loaded on first NOSCRIPT (a restarted or another
    server). redis-py's own `AsyncScript` does the same with a little more work per call,
    and these calls are the hot path of every send and ack. On a cluster the call goes to the
    node owning the keys, and a load goes to every primary."""

    __slots__ = ("_client", "_sha", "_source")

    def __init__(self, client: RedisClient, source: str) -> None:
        self._client = client
        self._source = source
        self._sha = hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()

    async def __call__(self, numkeys: int, *keys_and_args: str | bytes | int) -> Any:
        try:
            return await self._client.evalsha(self._sha, numkeys, *keys_and_args)
        except NoScriptError:
            await self._client.script_load(self._source)
            return await self._client.evalsha(self._sha, numkeys, *keys_and_args)


def as_str(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def body_of(fields: object) -> str | bytes | None:
    """The `e` field of an entry, whether redis-py gave a dict or Lua a flat list."""
    if isinstance(fields, dict):
        body = fields.get(b"e", fields.get("e"))
        return body if isinstance(body, str | bytes) else None
    if isinstance(fields, list):
        for key, value in zip(fields[::2], fields[1::2], strict=False):
            if key in (b"e", "e") and isinstance(value, str | bytes):
                return value
    return None


def stream_entries(reply: Any) -> list[Any]:
    """The (id, fields) pairs of an XREADGROUP reply, whatever the client's settings: RESP2
    gives [[stream, entries]], `legacy_responses=False` {stream: entries}, and RESP3 with
    legacy responses {stream: [entries]}; an entry itself is always a tuple."""
    if not reply:
        return []
    groups = reply.values() if isinstance(reply, dict) else (item[1] for item in reply)
    found: list[Any] = []
    for entries in groups:
        if entries and isinstance(entries[0], list):
            found += [entry for inner in entries for entry in inner]
        else:
            found += entries
    return found


# Dedupe and the capacity check must be atomic with the XADD, and only a script can make the
# XADD conditional: MULTI cannot branch on `SET NX`'s answer. A Lua script runs atomically, so
# EXISTS then SET EX is as good as SET NX, and lets a duplicate be skipped even while the
# stream is full. It adds envelopes in order while there is room and returns how many it
# took (added, or skipped as seen) plus the stream's length; the sender waits, resends the rest.
SEND = """
local capacity = tonumber(ARGV[1])
local length = redis.call('XLEN', KEYS[1])
local taken = 0
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then
    if length >= capacity then break end
    redis.call('SET', KEYS[i], '1', 'EX', ARGV[2])
    redis.call('XADD', KEYS[1], '*', 'e', ARGV[i + 1])
    length = length + 1
  end
  taken = taken + 1
end
return {taken, length}
"""

# XACK and XDEL together or not at all: an entry acked but not deleted would hold a unit of
# capacity for ever. One script is also one command on the wire, cheaper than MULTI/EXEC.
ACK = """
redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 2))
redis.call('XDEL', KEYS[1], unpack(ARGV, 2))
return redis.call('XLEN', KEYS[1])
"""

# ARGV: group, dead maxlen, then (entry id, body, reason) triples.
DEAD = """
for i = 3, #ARGV, 3 do
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'e', ARGV[i + 1], 'r', ARGV[i + 2])
  redis.call('XACK', KEYS[1], ARGV[1], ARGV[i])
  redis.call('XDEL', KEYS[1], ARGV[i])
end
return redis.call('XLEN', KEYS[1])
"""

# This consumer's own pending entries after a cursor (a previous life's, or those of a read
# that was cancelled mid-flight), each with its delivery count, which the read has just raised.
# XREADGROUP does not report counts, so the XPENDING must run in the same atomic step.
# Returns {entries read, last id, stream length, {id, count, fields}...}.
RECOVER = """
local read = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[4],
  'STREAMS', KEYS[1], ARGV[3])
local entries = (read and read[1] and read[1][2]) or {}
local out = {#entries, ARGV[3], redis.call('XLEN', KEYS[1])}
if #entries == 0 then return out end
local counts = {}
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], entries[1][1],
  entries[#entries][1], #entries, ARGV[2])
for _, p in ipairs(pending) do counts[p[1]] = p[4] end
for _, e in ipairs(entries) do
  out[2] = e[1]
  if e[2] then
    out[#out + 1] = {e[1], counts[e[1]] or 1, e[2]}
  else
    redis.call('XACK', KEYS[1], ARGV[1], e[1])
  end
end
return out
"""

# Entries of dead consumers, idle past `claim_idle`, with their (raised) delivery counts.
# Returns {next cursor, stream length, {id, count, fields}...}.
CLAIM = """
local claimed = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4],
  'COUNT', ARGV[5])
local out = {claimed[1], redis.call('XLEN', KEYS[1])}
for _, e in ipairs(claimed[2]) do
  if e[2] then
    local p = redis.call('XPENDING', KEYS[1], ARGV[1], e[1], e[1], 1)
    out[#out + 1] = {e[1], (p[1] and p[1][4]) or 1, e[2]}
  end
end
return out
"""

# The heartbeat of a live consumer: reset the idle time of the entries it holds, so that no
# other consumer's XAUTOCLAIM takes them while a long handler runs. An unconditional XCLAIM
# would steal back an entry another consumer already claimed (and may be handling), so the
# ownership check and the reset must be one atomic step. JUSTID leaves the delivery count
# alone: a heartbeat is not a delivery. An entry pending for us but deleted from the stream
# comes back from XCLAIM empty (and leaves our PEL): it is as lost as one owned by another.
# ARGV: group, consumer, then entry ids. Returns the ids that are no longer ours.
KEEP_ALIVE = """
local lost = {}
for i = 3, #ARGV do
  local mine = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1, ARGV[2])
  if #mine == 0
    or #redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID') == 0 then
    lost[#lost + 1] = ARGV[i]
  end
end
return lost
"""
