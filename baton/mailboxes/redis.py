"""`RedisMailbox`: a durable mailbox on a Redis stream, one consumer group per actor.

The keys it uses and the round trips it makes are `RedisStream`'s
(`baton.mailboxes._redis_stream`); this module decides what they mean for delivery.

Delivery is at least once. `attempt` comes from the stream's own delivery count, so it
survives a crash: an entry redelivered after its consumer died arrives with a higher attempt
and is dead-lettered once the count passes `max_attempts`. A consumer that died is detected
only by its entries going idle past `claim_idle`; other consumers then claim them. So that a
live consumer's entries never go idle, however long a handler runs, its owner calls
`keep_alive()` every `heartbeat_interval` (a third of `claim_idle`) for as long as it runs
(the runtime drives it): that resets the idle time of every entry the mailbox holds, buffered
or in hand. `claim_idle` therefore only has to exceed the longest gap between two heartbeats
(a stalled event loop, a slow Redis), not the longest handler. A consumer stalled past it
loses its entries to another: `keep_alive` reports them lost, and settling one is left to its
new owner. Needs Redis >= 7.0 (XAUTOCLAIM skips deleted entries). `client` may be a Redis
Cluster's: every key of one mailbox shares a hash slot (`baton.mailboxes.redis_client`).
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence

import anyio
from redis.exceptions import ResponseError

from baton._log import get_logger
from baton.errors import UsageError
from baton.mailboxes._redis_stream import DONE, Body, Entry, RedisStream, is_missing_group
from baton.mailboxes.codec import EnvelopeCodec
from baton.mailboxes.dead_letter_body import excerpt
from baton.mailboxes.envelope import Delivery, Envelope
from baton.mailboxes.errors import InvalidMessageError, MailboxBlockedError, MailboxClosedError
from baton.mailboxes.protocol import DeadLetterSink
from baton.mailboxes.redis_client import RedisClient

log = get_logger(__name__)

__all__ = ["Body", "RedisMailbox"]

# Lua's unpack() is bounded by its C stack (~8000 values); batches stay well under that.
_CHUNK = 500
_MIN_BACKOFF = 0.002
_MAX_BACKOFF = 0.1


class RedisMailbox:
    """A durable, bounded mailbox for one actor on a Redis stream (see the module doc).

    `depth()` is approximate: the stream's length as last seen by this object (every send,
    ack and claim reports it) minus the deliveries in hand. Other processes' sends show up at
    this object's next round trip, and other consumers' pending entries count as waiting.

    While it runs, the owner must call `keep_alive()` every `heartbeat_interval`, or entries
    held longer than `claim_idle` are taken over by other consumers (see the module doc).
    """

    def __init__(
        self,
        name: str,
        *,
        client: RedisClient,
        codec: EnvelopeCodec,
        capacity: int,
        dead_letters: DeadLetterSink | None,
        consumer: str,
        max_attempts: int = 3,
        claim_idle: float = 30.0,
        prefix: str = "baton",
        read_batch: int = 32,
        block: float = 1.0,
        dedupe_ttl: int = 600,
        dead_maxlen: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`block` is the longest one XREADGROUP waits server-side: keep it below the
        client's `socket_timeout`. `dedupe_ttl` (seconds) is how long a resend of the same
        envelope id is recognised."""
        if capacity < 1 or max_attempts < 1 or read_batch < 1:
            raise ValueError("capacity, max_attempts and read_batch must be >= 1")
        if claim_idle <= 0 or block <= 0 or dedupe_ttl < 1:
            raise ValueError("claim_idle and block must be > 0, dedupe_ttl >= 1")
        self._name = name
        self._redis = RedisStream(client, name, prefix=prefix, consumer=consumer)
        self._codec = codec
        self._capacity = capacity
        self._dead_letters = dead_letters
        self._max_attempts = max_attempts
        self._claim_idle = claim_idle
        self._read_batch = read_batch
        self._block = block
        self._dedupe_ttl = dedupe_ttl
        self._dead_maxlen = dead_maxlen
        self._clock = clock

        self._buffer: deque[Delivery] = deque()
        # Every entry this object holds (buffered or in hand): its delivery count and body.
        self._held: dict[str, tuple[int, Body]] = {}
        # Deliveries in hand whose entries another consumer took over (or settled) while this
        # one stalled: settling them is the new owner's business, so their ack/nack is a no-op.
        self._lost: set[str] = set()
        self._closed = False
        self._group_ready = False
        self._recover_from: str | None = "0"  # a previous life's entries come first
        self._last_new_id = "0"
        self._claim_cursor = DONE
        self._next_claim = float("-inf")
        self._read_scope: anyio.CancelScope | None = None
        # Uncontended (one receiver per actor), it must not cost an event-loop pass per fill.
        self._filling = anyio.Lock(fast_acquire=True)
        self._stream_len = 0
        # Senders parked on a full stream wait on `_room`, set by this object's acks (other
        # processes' acks are seen by polling). `_freed` counts acks, so a sender whose "full"
        # answer crossed an ack in flight retries at once instead of missing the wake-up.
        self._room = anyio.Event()
        self._senders_waiting = 0
        self._freed = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def durable(self) -> bool:
        return True

    # --- sending ---------------------------------------------------------------------------

    async def send(self, envelope: Envelope) -> None:
        """Store the envelope, waiting while the stream holds `capacity` entries."""
        if self._closed:
            raise MailboxClosedError(self._name)
        await self._add([self._redis.seen_key(envelope.id)], [self._codec.encode(envelope)])

    async def send_many(self, envelopes: Sequence[Envelope]) -> None:
        """Store envelopes in order, many per round trip; on `MailboxClosedError` those before
        the first one refused are stored."""
        if self._closed:
            raise MailboxClosedError(self._name)
        keys = [self._redis.seen_key(envelope.id) for envelope in envelopes]
        bodies = [self._codec.encode(envelope) for envelope in envelopes]
        for start in range(0, len(keys), _CHUNK):
            await self._add(keys[start : start + _CHUNK], bodies[start : start + _CHUNK])

    def send_nowait(self, envelope: Envelope) -> None:
        raise MailboxBlockedError(
            f"mailbox {self._name!r} is durable: a message is stored before the sender goes "
            "on; await send() instead"
        )

    async def _add(self, keys: list[str], bodies: list[str]) -> None:
        delay = _MIN_BACKOFF
        while True:
            freed = self._freed
            taken, self._stream_len = await self._redis.add(
                keys, bodies, capacity=self._capacity, dedupe_ttl=self._dedupe_ttl
            )
            if taken == len(keys):
                return
            keys, bodies = keys[taken:], bodies[taken:]
            if self._freed == freed:
                await self._wait_for_room(delay)
                delay = min(delay * 2, _MAX_BACKOFF)
            if self._closed:
                raise MailboxClosedError(self._name)

    async def _wait_for_room(self, delay: float) -> None:
        room = self._room
        self._senders_waiting += 1
        try:
            with anyio.move_on_after(delay):
                await room.wait()
        finally:
            self._senders_waiting -= 1

    def _wake_senders(self) -> None:
        self._freed += 1
        if self._senders_waiting:
            self._room.set()
            self._room = anyio.Event()

    # --- receiving -------------------------------------------------------------------------

    async def receive(self) -> Delivery:
        while True:
            delivery = self.receive_nowait()
            if delivery is not None:
                return delivery
            if self._closed:
                raise MailboxClosedError(self._name)
            async with self._filling:
                if not self._buffer and not self._closed:
                    await self._fill()

    def receive_nowait(self) -> Delivery | None:
        return self._buffer.popleft() if self._buffer else None

    async def _fill(self) -> None:
        """One round trip for more entries: own pending first, then claims, then new ones."""
        try:
            if not self._group_ready:
                await self._redis.create_group()
                self._group_ready = True
            if self._recover_from is not None:
                await self._recover(self._recover_from)
                return
            now = self._clock()
            if now >= self._next_claim:
                await self._claim(now)
                if self._buffer or self._claim_cursor != DONE:
                    return
            await self._read_new(min(self._block, self._next_claim - now))
        except ResponseError as exc:
            if not is_missing_group(exc):
                raise
            # The stream was deleted under us (FLUSHDB, an operator): recreate and go on.
            self._group_ready = False

    async def _recover(self, cursor: str) -> None:
        more, self._stream_len, entries = await self._redis.recover(cursor, self._read_batch)
        self._recover_from = more
        await self._accept(entries)

    async def _claim(self, now: float) -> None:
        self._claim_cursor, self._stream_len, entries = await self._redis.claim(
            self._claim_idle, self._claim_cursor, self._read_batch
        )
        if self._claim_cursor == DONE:
            self._next_claim = now + self._claim_idle / 2
        if entries:
            log.info("mailbox.claimed", mailbox=self._name, entries=len(entries))
        await self._accept(entries)

    async def _read_new(self, block: float) -> None:
        # Until the reply is in, what the read delivered sits in our PEL and nowhere else:
        # if the read is cancelled, the next fill recovers it.
        self._recover_from = self._last_new_id
        with anyio.CancelScope() as scope:
            self._read_scope = scope
            try:
                entries = await self._redis.read_new(self._read_batch, block)
            finally:
                self._read_scope = None
        if scope.cancelled_caught:  # close() woke us: the entries stay pending for later
            return
        self._recover_from = None
        if entries:
            self._last_new_id = entries[-1][0]
            await self._accept(entries)
            self._stream_len = max(self._stream_len, len(self._held))

    async def _accept(self, entries: Iterable[Entry]) -> None:
        """Buffer what can be delivered; dead-letter what cannot be decoded or ran out of
        attempts. Never raises for a bad entry: one bad message must not stop the actor."""
        dead: list[tuple[str, Envelope, Body, str]] = []
        held = self._held
        for tag, count, body in entries:
            # Ours again (claimed back after its new owner died): a lost copy's ack counts.
            self._lost.discard(tag)
            if tag in held:  # already ours (our own claim scan found it idle in the buffer)
                held[tag] = (max(count, held[tag][0]), held[tag][1])
                continue
            if body is None:
                dead.append((tag, self._undecodable("", count), "", "stream entry has no 'e'"))
                continue
            try:
                envelope = self._codec.decode(body)
            except InvalidMessageError as exc:
                dead.append((tag, self._undecodable(body, count), body, str(exc)))
                continue
            if count > 1:
                envelope = envelope._replace(attempt=envelope.attempt + count - 1)
            if count > self._max_attempts:
                reason = f"delivered {count} times, more than max_attempts={self._max_attempts}"
                dead.append((tag, envelope, body, reason))
                continue
            held[tag] = (count, body)
            self._buffer.append(Delivery(envelope, tag))
        if dead:
            await self._dead_letter(dead)

    def _undecodable(self, body: Body, count: int) -> Envelope:
        """A stand-in envelope for the sink: the raw body as payload, its id when readable."""
        text = body.decode(errors="replace") if isinstance(body, bytes) else body
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("seq"), int):
            origin = data.get("origin")
            if isinstance(origin, str):
                return Envelope(self._name, text, attempt=count, seq=data["seq"], origin=origin)
        return Envelope(self._name, text, attempt=count)

    # --- heartbeat -------------------------------------------------------------------------

    @property
    def heartbeat_interval(self) -> float:
        """How often the owner should call `keep_alive`: a third of `claim_idle`, so a
        heartbeat that is late or fails still leaves the next one time to land."""
        return self._claim_idle / 3

    async def keep_alive(self) -> int:
        """Reset the idle time of every entry held here (buffered or in hand) that is still
        pending for this consumer, so no other consumer claims it; return how many were.

        The others are lost: claimed by another consumer, or settled by someone, while this
        one stalled past `claim_idle`. A lost buffered entry is dropped, not handed out; the
        ack or nack of a lost one in hand does nothing, leaving it to its new owner. One
        round trip per 500 entries held; none when nothing is."""
        tags = list(self._held)
        kept = len(tags)
        for start in range(0, len(tags), _CHUNK):
            chunk = tags[start : start + _CHUNK]
            try:
                lost = await self._redis.keep_alive(chunk)
            except ResponseError as exc:
                if not is_missing_group(exc):
                    raise
                lost = chunk  # the stream was deleted under us, and all it held with it
            kept -= len(lost)
            self._drop_lost(lost)
        return kept

    def _drop_lost(self, tags: list[str]) -> None:
        # An entry acked while the heartbeat was in flight is gone too, but not lost.
        lost = {tag for tag in tags if self._held.pop(tag, None) is not None}
        if not lost:
            return
        kept = [delivery for delivery in self._buffer if delivery.tag not in lost]
        in_hand = lost.difference(delivery.tag for delivery in self._buffer)
        self._buffer.clear()
        self._buffer.extend(kept)
        self._lost |= in_hand
        log.warning(
            "mailbox.entries_lost", mailbox=self._name, entries=len(lost), in_hand=len(in_hand)
        )

    def _settled_elsewhere(self, tag: str) -> bool:
        if tag not in self._lost:
            return False
        self._lost.discard(tag)
        log.info("mailbox.lost_entry_not_settled", mailbox=self._name, entry=tag)
        return True

    # --- settling --------------------------------------------------------------------------

    async def ack(self, delivery: Delivery) -> None:
        tag = self._tag(delivery)
        if self._settled_elsewhere(tag):
            return
        self._held.pop(tag, None)
        self._stream_len = await self._redis.ack([tag])
        self._wake_senders()

    async def ack_many(self, deliveries: Sequence[Delivery]) -> None:
        """Ack several deliveries in one round trip per chunk."""
        tags = [self._tag(delivery) for delivery in deliveries]
        tags = [tag for tag in tags if not self._settled_elsewhere(tag)]
        if not tags:
            return
        for tag in tags:
            self._held.pop(tag, None)
        for start in range(0, len(tags), _CHUNK):
            self._stream_len = await self._redis.ack(tags[start : start + _CHUNK])
        self._wake_senders()

    async def nack(self, delivery: Delivery, *, requeue: bool, reason: str) -> None:
        tag = self._tag(delivery)
        if self._settled_elsewhere(tag):
            return  # requeued, it would be stolen back from the consumer now handling it
        envelope = delivery.envelope
        count, body = self._held.get(tag, (envelope.attempt, ""))
        if requeue and count < self._max_attempts:
            # Raise the stream's own count too (and reset the idle time): if we die before
            # the retry is settled, whoever claims the entry sees the attempts made here.
            if not await self._redis.requeue(tag, count + 1):  # gone: someone else settled it
                self._held.pop(tag, None)
                log.warning("mailbox.requeue_lost", mailbox=self._name, entry=tag)
                return
            self._held[tag] = (count + 1, body)
            self._buffer.appendleft(Delivery(envelope.retried(), tag))
            return
        if requeue:
            reason = f"{reason} (requeued past max_attempts={self._max_attempts})"
        await self._dead_letter([(tag, envelope, body or self._codec.encode(envelope), reason)])

    async def _dead_letter(self, letters: list[tuple[str, Envelope, Body, str]]) -> None:
        for tag, _, _, _ in letters:
            # Let go before the round trip, as ack does: a heartbeat crossing it would find
            # the entry gone and report it lost.
            self._held.pop(tag, None)
        self._stream_len = await self._redis.dead_letter(
            [(tag, *_bounded(body, reason)) for tag, _, body, reason in letters],
            self._dead_maxlen,
        )
        self._wake_senders()
        for tag, envelope, _, reason in letters:
            # Info, not warning: the sink reports the dead letter itself; this adds the entry id.
            log.info("mailbox.dead_lettered", mailbox=self._name, entry=tag, reason=reason)
            if self._dead_letters is not None:
                self._dead_letters.dead_letter(envelope, reason)

    def _tag(self, delivery: Delivery) -> str:
        if delivery.tag is None:
            raise UsageError(
                f"delivery of {delivery.envelope.id} has no stream entry id; ack and nack "
                f"only what mailbox {self._name!r} handed out"
            )
        return delivery.tag

    # --- state -----------------------------------------------------------------------------

    def depth(self) -> int:
        in_hand = len(self._held) - len(self._buffer)
        return max(len(self._buffer), self._stream_len - in_hand)

    async def close(self) -> None:
        """Refuse sends; `receive` hands out what is buffered here, then raises closed. The
        stream's backlog stays in Redis for the next consumer."""
        self._shut()

    def drain_nowait(self) -> list[Envelope]:
        """Close for good. Nothing is returned to dead-letter: every entry, buffered ones
        included, stays pending in Redis for this consumer's next life or another's claim.
        The client is the owner's to close."""
        self._shut()
        for delivery in self._buffer:
            self._held.pop(str(delivery.tag), None)
        self._buffer.clear()
        return []

    def _shut(self) -> None:
        # Wake a receiver blocked in XREADGROUP and the senders parked on a full stream: both
        # see the mailbox closed and leave.
        self._closed = True
        if self._read_scope is not None:
            self._read_scope.cancel()
        self._room.set()


def _bounded(body: Body, reason: str) -> tuple[str, str]:
    """What the dead-letter stream keeps of a body: an excerpt, its size and hash named in
    the reason when cut (the stream is trimmed by count; this bounds each entry)."""
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    cut = excerpt(text)
    if cut.whole:
        return cut.text, reason
    return cut.text, f"{reason} (body cut to an excerpt: {cut.size} bytes, sha256 {cut.sha256})"
