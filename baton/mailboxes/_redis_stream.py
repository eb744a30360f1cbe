"""`RedisStream`: one actor's stream in Redis, the keys around it, and every round trip
`RedisMailbox` makes to them. It holds no state but the names; what to buffer, retry or
dead-letter is the mailbox's business (`baton.mailboxes.redis`).

Keys (the prefix is "baton" by default; `<name>` is the actor's name). Each carries the
hash tag `{<name>}` (`slot_tag`), so on a Redis Cluster all of them share one slot and the
scripts, which touch several at once, run there; a single server ignores the braces:

- `<prefix>:mailbox:{<name>}`: the stream; field `e` holds the codec's JSON. An entry is
  deleted when it is acked or dead-lettered, so the stream's length is exactly pending +
  unread: that is what `capacity` bounds, and no MAXLEN trim ever drops a message nobody has
  handled.
- consumer group `<name>`; this process reads as consumer `consumer`.
- `<prefix>:dead:{<name>}`: dead letters, `e` the body and `r` the reason (trimmed to the
  most recent `dead_maxlen`: it is a record for people, not a queue).
- `<prefix>:seen:{<name>}:<envelope id>`: dedupe markers, expiring after `dedupe_ttl`.

Every call that changes the stream's length returns it, so the mailbox's `depth()` stays
current without a round trip of its own.
"""

from __future__ import annotations

from redis.exceptions import ResponseError

from baton.mailboxes import _redis_scripts as scripts
from baton.mailboxes._redis_scripts import as_str, body_of, stream_entries
from baton.mailboxes.redis_client import RedisClient, slot_tag

Body = str | bytes
Entry = tuple[str, int, Body | None]
"""A stream entry as read: its id, how often it has been delivered, its body (None: no `e`)."""

DONE = "0-0"
"""The cursor of a finished scan (XAUTOCLAIM's, and ours for recovery)."""


def is_missing_group(error: ResponseError) -> bool:
    """Whether Redis refused because the stream (and its group) was deleted under us."""
    return "NOGROUP" in str(error)


class RedisStream:
    """The round trips of one actor's mailbox: a stream read by one consumer of its group."""

    def __init__(self, client: RedisClient, name: str, *, prefix: str, consumer: str) -> None:
        self.client = client
        self.consumer = consumer
        self.group = name
        tag = slot_tag(name)
        self.stream = f"{prefix}:mailbox:{tag}"
        self.dead = f"{prefix}:dead:{tag}"
        self._seen = f"{prefix}:seen:{tag}:"
        self._send = scripts.Script(client, scripts.SEND)
        self._ack = scripts.Script(client, scripts.ACK)
        self._dead_letter = scripts.Script(client, scripts.DEAD)
        self._recover = scripts.Script(client, scripts.RECOVER)
        self._claim = scripts.Script(client, scripts.CLAIM)
        self._keep_alive = scripts.Script(client, scripts.KEEP_ALIVE)

    def seen_key(self, envelope_id: str) -> str:
        """The dedupe marker of an envelope id."""
        return self._seen + envelope_id

    async def add(
        self, keys: list[str], bodies: list[str], *, capacity: int, dedupe_ttl: int
    ) -> tuple[int, int]:
        """Append bodies in order while the stream holds fewer than `capacity` entries, each
        once per dedupe key; how many of them were taken, and the stream's length."""
        taken, length = await self._send(
            len(keys) + 1, self.stream, *keys, capacity, dedupe_ttl, *bodies
        )
        return int(taken), int(length)

    async def create_group(self) -> None:
        """Make the consumer group (and the stream) unless they exist."""
        try:
            await self.client.xgroup_create(self.stream, self.group, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def recover(self, cursor: str, count: int) -> tuple[str | None, int, list[Entry]]:
        """Up to `count` of this consumer's own pending entries after `cursor`: where to go
        on from (None: all recovered), the stream's length, the entries."""
        read, last, length, *entries = await self._recover(
            1, self.stream, self.group, self.consumer, cursor, count
        )
        more = as_str(last) if int(read) >= count else None
        return more, int(length), [(as_str(i), int(c), body_of(f)) for i, c, f in entries]

    async def claim(self, min_idle: float, cursor: str, count: int) -> tuple[str, int, list[Entry]]:
        """Take over up to `count` entries idle for `min_idle` seconds, scanning from
        `cursor`: the next cursor (`DONE` at the end), the stream's length, the entries."""
        cursor, length, *entries = await self._claim(
            1, self.stream, self.group, self.consumer, int(min_idle * 1000), cursor, count
        )
        return as_str(cursor), int(length), [(as_str(i), int(c), body_of(f)) for i, c, f in entries]

    async def read_new(self, count: int, block: float) -> list[Entry]:
        """Up to `count` entries never delivered, waiting at most `block` seconds for one."""
        reply = await self.client.xreadgroup(
            self.group,
            self.consumer,
            {self.stream: ">"},
            count=count,
            block=max(1, int(block * 1000)),  # 0 would mean "for ever"
        )
        return [(as_str(i), 1, body_of(f)) for i, f in stream_entries(reply)]

    async def ack(self, tags: list[str]) -> int:
        """Settle and delete the entries; the stream's length."""
        return int(await self._ack(1, self.stream, self.group, *tags))

    async def dead_letter(self, letters: list[tuple[str, Body, str]], maxlen: int) -> int:
        """Move (entry id, body, reason) to the dead-letter stream, trimmed to `maxlen`, and
        delete the entries; the stream's length."""
        args: list[Body | int] = [self.stream, self.dead, self.group, maxlen]
        for tag, body, reason in letters:
            args += [tag, body, reason]
        return int(await self._dead_letter(2, *args))

    async def keep_alive(self, tags: list[str]) -> list[str]:
        """Reset the idle time of the entries still pending for this consumer; the others'
        ids (another consumer's now, or settled)."""
        lost = await self._keep_alive(1, self.stream, self.group, self.consumer, *tags)
        return [as_str(tag) for tag in lost]

    async def requeue(self, tag: str, delivery_count: int) -> bool:
        """Set the entry's delivery count (and reset its idle time) for a retry here; False
        when it is gone, settled by someone else."""
        kept = await self.client.xclaim(
            self.stream,
            self.group,
            self.consumer,
            0,
            [tag],
            retrycount=delivery_count,
            justid=True,
        )
        return bool(kept)
