"""A full disk for the sqlite store, switched on and off by a test, and the wait for room."""

from __future__ import annotations

import sqlite3
from typing import Any

import anyio

from baton.mailboxes.sqlite import SqliteStore


class FullDisk:
    """The store's connection, with a switch: while on, every statement that writes fails as
    SQLite fails when the disk is full."""

    def __init__(self, store: SqliteStore) -> None:
        self._db = store._db
        self.on = False
        store._db = self  # type: ignore[assignment]
        store._cursor = self  # type: ignore[assignment]  # the statements' shared cursor

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        if self.on and not sql.lstrip().upper().startswith(("SELECT", "PRAGMA")):
            error = sqlite3.OperationalError("database or disk is full")
            error.sqlite_errorcode = sqlite3.SQLITE_FULL  # type: ignore[attr-defined]
            raise error
        return self._db.execute(sql, params)

    def __enter__(self) -> FullDisk:
        self._db.__enter__()
        return self

    def __exit__(self, *exc: object) -> Any:
        return self._db.__exit__(*exc)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


class Room:
    """The store's sleep while it waits for room: counts the waits and lets the test decide
    when room returns."""

    def __init__(self) -> None:
        self.waits = 0
        self.waiting = anyio.Event()
        self.back = anyio.Event()

    async def __call__(self, _: float) -> None:
        self.waits += 1
        self.waiting.set()
        await self.back.wait()
