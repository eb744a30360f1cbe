"""Durable mailbox cost: baton's SqliteMailbox against raw sqlite3 doing the same writes.

Run: python bench/sqlite_mailbox.py [--messages N] [--repeats R]
Per message both sides store the envelope (INSERT), mark it in flight (UPDATE) and delete it
on ack (DELETE + remembered id), each its own commit in WAL mode. The baseline runs those
statements back to back on the calling thread; baton runs them from the event loop through
its worker thread and also encodes and decodes the envelope. Prints messages/s for each and
baton's ratio; the memory mailbox is shown for scale.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

import anyio
from pydantic import BaseModel

from baton.mailboxes import EnvelopeCodec, MemoryMailbox, SqliteMailbox, SqliteStore
from baton.mailboxes.envelope import Envelope


class Ping(BaseModel):
    n: int


async def durable(path: Path, messages: int) -> float:
    store = await SqliteStore.open(path)
    box = SqliteMailbox("bench", store, EnvelopeCodec({"Ping": Ping}), capacity=messages)
    ping = Ping(n=1)
    try:
        start = time.perf_counter()
        for _ in range(messages):
            await box.send(Envelope("bench", ping))
        for _ in range(messages):
            await box.ack(await box.receive())
        return messages / (time.perf_counter() - start)
    finally:
        await store.close()


async def in_memory(messages: int) -> float:
    box = MemoryMailbox("bench", capacity=messages)
    ping = Ping(n=1)
    start = time.perf_counter()
    for _ in range(messages):
        await box.send(Envelope("bench", ping))
    for _ in range(messages):
        await box.ack(await box.receive())
    return messages / (time.perf_counter() - start)


def raw(path: Path, messages: int) -> float:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(
        "CREATE TABLE envelopes (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE, "
        "recipient TEXT, in_flight INTEGER DEFAULT 0, deliveries INTEGER DEFAULT 0, body TEXT)"
    )
    db.execute("CREATE TABLE acked (n INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE)")
    body = Ping(n=1).model_dump_json()
    try:
        start = time.perf_counter()
        seqs = []
        for i in range(messages):
            cursor = db.execute(
                "INSERT INTO envelopes (id, recipient, body) VALUES (?, 'bench', ?)", (str(i), body)
            )
            seqs.append(cursor.lastrowid)
        for i, seq in enumerate(seqs):
            db.execute("UPDATE envelopes SET in_flight = 1, deliveries = 1 WHERE seq = ?", (seq,))
            with db:
                db.execute("BEGIN")
                db.execute("DELETE FROM envelopes WHERE seq = ?", (seq,))
                db.execute("INSERT INTO acked (id) VALUES (?)", (str(i),))
        return messages / (time.perf_counter() - start)
    finally:
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    baton_rates, raw_rates, memory_rates = [], [], []
    for repeat in range(args.repeats):
        with tempfile.TemporaryDirectory() as folder:
            base = Path(folder)
            raw_rates.append(raw(base / f"raw{repeat}.sqlite3", args.messages))
            baton_rates.append(anyio.run(durable, base / f"baton{repeat}.sqlite3", args.messages))
            memory_rates.append(anyio.run(in_memory, args.messages))
    best_baton, best_raw, best_memory = max(baton_rates), max(raw_rates), max(memory_rates)
    print(f"{'mailbox':<28}{'messages/s':>12}{'vs raw sqlite3':>16}")
    print(f"{'raw sqlite3 (baseline)':<28}{best_raw:>12,.0f}{1.0:>16.2f}")
    print(f"{'baton SqliteMailbox':<28}{best_baton:>12,.0f}{best_baton / best_raw:>16.2f}")
    print(f"{'baton MemoryMailbox':<28}{best_memory:>12,.0f}{best_memory / best_raw:>16.2f}")


if __name__ == "__main__":
    main()
