"""`RedisScenarioStore`: the Scheduler's scenario records in Redis, when processes share one.

With a Redis mailbox the records live beside the mailboxes, so the Scheduler can be hosted by
any process after a restart, on another host, with no disk shared (README.md, "Scaling out").
Keys, under one hash tag so that a save's two writes are one script on Redis Cluster too (the
prefix is "baton" by default):

- `{prefix:scheduler}:record:<scenario>`: the record's JSON, as the file store writes it;
- `{prefix:scheduler}:records`: the set of the scenarios' names.

A record that does not read back (not JSON, not a record, a key of another type) is named
with its key and what to do, exactly as a damaged file is (`scenario_store.py`): renamed
aside, the scenario can be submitted afresh.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from redis.exceptions import RedisError

from baton._log import get_logger
from baton.errors import RuntimeFailure
from baton.mailboxes.redis_client import RedisClient, connect
from baton.pipeline.errors import DamagedScenarioError
from baton.pipeline.scenario import ScenarioRecord
from baton.pipeline.scenario_store import record_bytes, record_problem
from baton.runtime.settings import redact_url

log = get_logger(__name__)

_SOCKET_TIMEOUT = 30.0


# KEYS: the record, the set of names; ARGV: the record's JSON, its scenario.
_SAVE = """
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[2], ARGV[2])
"""


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class RedisScenarioStore:
    """Scheduler state in Redis; `url` is what the fix of a damaged record tells people to
    connect to (passwords redacted). `before_save`, when given, is awaited before each
    record is written: the spend ledger puts the run's cap in Redis there, so a worker sees it
    before the work order the record carries is sent (`spend.py`)."""

    def __init__(
        self,
        client: RedisClient,
        *,
        prefix: str = "baton",
        url: str = "redis://HOST:PORT/DB",
        before_save: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.client = client
        self.url = url
        self.before_save = before_save
        self._tag = f"{{{prefix}:scheduler}}"
        self.index = f"{self._tag}:records"
        self.damaged: dict[str, DamagedScenarioError] = {}
        self._save = client.register_script(_SAVE)

    def key(self, scenario: str) -> str:
        return f"{self._tag}:record:{scenario}"

    def path(self, scenario: str) -> str:
        return f"Redis key {self.key(scenario)}"

    async def save(self, record: ScenarioRecord) -> None:
        if self.before_save is not None:
            await self.before_save()
        keys = [self.key(record.scenario), self.index]
        await self._save(keys=keys, args=[record_bytes(record), record.scenario])

    async def load_all(self) -> dict[str, ScenarioRecord]:
        """Every scenario record that reads back; the damaged ones are in `damaged`."""
        records: dict[str, ScenarioRecord] = {}
        self.damaged = {}
        names = sorted(_text(name) for name in await self.client.smembers(self.index))
        if not names:
            return records
        values = await self.client.mget([self.key(name) for name in names])
        for name, value in zip(names, values, strict=True):
            if value is None:
                problem = await self._missing(name)
                if problem is None:
                    continue  # renamed aside: the scenario starts afresh when submitted
                record: ScenarioRecord | str = problem
            else:
                record = record_problem(value if isinstance(value, bytes) else value.encode(), name)
            if isinstance(record, str):
                error = self._damaged(name, record)
                log.error(
                    "scheduler.damaged_state", scenario=name, path=self.key(name), error=str(error)
                )
                self.damaged[name] = error
                continue
            records[record.scenario] = record
        return records

    async def damage(self, scenario: str) -> DamagedScenarioError | None:
        """The error of the scenario's damaged record, if its key is still there (once
        renamed aside, the scenario can start afresh)."""
        error = self.damaged.get(scenario)
        if error is not None and not await self.client.exists(self.key(scenario)):
            del self.damaged[scenario]
            return None
        return error

    async def _missing(self, name: str) -> str | None:
        """Why `MGET` found no string under the scenario's key: None when there is no key."""
        kind = _text(await self.client.type(self.key(name)))
        return None if kind == "none" else f"is a Redis {kind}, not a scenario record"

    def _damaged(self, name: str, problem: str) -> DamagedScenarioError:
        key = self.key(name)
        fix = (
            f"move it aside (e.g. `redis-cli -u {self.url} RENAME '{key}' '{key}.damaged'`) "
            f"and submit {name!r} again to start it afresh, or restore it from a backup and "
            "restart `baton run`"
        )
        return DamagedScenarioError(name, self.path(name), problem, fix)


@asynccontextmanager
async def redis_records(url: str, *, prefix: str) -> AsyncIterator[RedisScenarioStore]:
    """A store on its own connection to `url`, for a command with no runtime open (`baton
    status` when no process answers); closed after the block."""
    shown = redact_url(url)
    try:
        client = await connect(url, socket_timeout=_SOCKET_TIMEOUT)
    except (RedisError, OSError) as exc:
        raise _unreachable(shown, exc) from None
    try:
        yield RedisScenarioStore(client, prefix=prefix, url=shown)
    except (RedisError, OSError) as exc:
        raise _unreachable(shown, exc) from None
    finally:
        await client.aclose()


def _unreachable(url: str, exc: BaseException) -> RuntimeFailure:
    return RuntimeFailure(
        f"cannot read the scenario records in Redis at {url} ({exc}): start redis-server "
        "there, or check runtime.mailbox in baton.toml"
    )
