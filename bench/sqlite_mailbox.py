"""Durable mailbox cost: baton's SqliteMailbox against raw sqlite3 doing the same durable work.

Run: python bench/sqlite_mailbox.py [--messages N] [--senders S] [--repeats R]

Durable work per message, on both sides: store the envelope (INSERT), mark it in flight
(UPDATE), delete it on ack with its id remembered (DELETE + INSERT), each committed before
the caller goes on, in WAL mode with `synchronous=NORMAL`. The baseline runs those
statements back to back on the calling thread, a commit each. baton runs them from the event
loop (a batch of whatever is queued per transaction: group commit; the take of a message that
was waiting commits with the ack before it) and also encodes and decodes the envelope, as the
runtime does. Both fsync only at checkpoints: raw sqlite3's automatic ones, inline; baton's
on its checkpointer's thread.

Two phases, each timed: `tell` — S tasks send N messages between them into one mailbox (a
send returns once its message is committed); `drain` — one consumer receives and acks them
all. Prints messages/s and baton's ratio to the baseline for each phase and for the whole,
best of R runs, and the transactions baton used per message.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
from pydantic import BaseModel

from baton.mailboxes import EnvelopeCodec, SqliteMailbox, SqliteStore
from baton.mailboxes.envelope import Envelope


class Ping(BaseModel):
    n: int


@dataclass(frozen=True)
class Rates:
    tell: float
    drain: float
    whole: float
    commits_per_message: float


async def durable(path: Path, messages: int, senders: int) -> Rates:
    async with SqliteStore.open(path) as store:
        box = SqliteMailbox("bench", store, EnvelopeCodec({"Ping": Ping}), capacity=messages)
        per_sender = messages // senders
        batches_before = store.batches
        start = time.perf_counter()

        async def send_some() -> None:
            for n in range(per_sender):
                await box.send(Envelope("bench", Ping(n=n)))

        async with anyio.create_task_group() as group:
            for _ in range(senders):
                group.start_soon(send_some)
        told = time.perf_counter()
        for _ in range(per_sender * senders):
            await box.ack(await box.receive())
        end = time.perf_counter()
        total = per_sender * senders
        return Rates(
            total / (told - start),
            total / (end - told),
            total / (end - start),
            (store.batches - batches_before) / total,
        )


def raw(path: Path, messages: int, senders: int) -> Rates:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(
        "CREATE TABLE envelopes (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE, "
        "recipient TEXT, in_flight INTEGER DEFAULT 0, deliveries INTEGER DEFAULT 0, body TEXT)"
    )
    db.execute("CREATE TABLE acked (n INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE)")
    total = (messages // senders) * senders
    try:
        start = time.perf_counter()
        seqs = []
        for i in range(total):
            body = Ping(n=i).model_dump_json()
            cursor = db.execute(
                "INSERT INTO envelopes (id, recipient, body) VALUES (?, 'bench', ?)", (str(i), body)
            )
            seqs.append(cursor.lastrowid)
        told = time.perf_counter()
        for i, seq in enumerate(seqs):
            db.execute("UPDATE envelopes SET in_flight = 1, deliveries = 1 WHERE seq = ?", (seq,))
            db.execute("BEGIN")
            db.execute("DELETE FROM envelopes WHERE seq = ?", (seq,))
            db.execute("INSERT INTO acked (id) VALUES (?)", (str(i),))
            db.execute("COMMIT")
        end = time.perf_counter()
        return Rates(total / (told - start), total / (end - told), total / (end - start), 3.0)
    finally:
        db.close()


def _best(runs: list[Rates]) -> Rates:
    return Rates(
        max(r.tell for r in runs),
        max(r.drain for r in runs),
        max(r.whole for r in runs),
        min(r.commits_per_message for r in runs),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=4000)
    parser.add_argument("--senders", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    baton_runs, raw_runs = [], []
    for repeat in range(args.repeats):
        with tempfile.TemporaryDirectory() as folder:
            base = Path(folder)
            raw_runs.append(raw(base / f"raw{repeat}.sqlite3", args.messages, args.senders))
            baton_runs.append(
                anyio.run(durable, base / f"baton{repeat}.sqlite3", args.messages, args.senders)
            )
    baton, baseline = _best(baton_runs), _best(raw_runs)
    print(f"{args.messages} messages, {args.senders} concurrent senders, best of {args.repeats}")
    print(f"{'phase':<10}{'raw sqlite3/s':>16}{'baton/s':>12}{'baton vs raw':>14}")
    for phase in ("tell", "drain", "whole"):
        ours, theirs = getattr(baton, phase), getattr(baseline, phase)
        print(f"{phase:<10}{theirs:>16,.0f}{ours:>12,.0f}{ours / theirs:>14.2f}")
    print(f"baton transactions per message: {baton.commits_per_message:.2f} (raw: 3.00)")


if __name__ == "__main__":
    main()
