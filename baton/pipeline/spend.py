"""`SpendLedger`: what each scenario run has spent on model calls, and its cap.

Every `model.call` line's `cost_usd` is added to its conversation's total (a scenario run's
agents and the Scheduler's task summaries share the run's conversation id); on start the
totals are read back from the token log, so a restarted process knows what was spent. An
agent asks `check` before each call of a scenario round: once the run has spent its cap
(`spent >= cap`), the call is not made (README.md, "Configuration", `max_cost_usd`).

With a Redis mailbox the ledger is shared (`redis_spend.SharedSpend`): every process adds its
calls to one counter per run and checks against the cap the Scheduler's process set there, so
the cap holds across every worker (README.md, "Scaling out"); the totals are then read from
Redis, not from this process's token log.

A call whose cost is unknown (no price) could count only as nothing, so a cap is refused
where an agent's model has no price: at start for baton.toml's cap, at submit for a
scenario's own (README.md, "Spend cap"). Without a cap, such a call's cost is "unknown".
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from baton._log import get_logger
from baton.agents.errors import SpendCapReachedFailure
from baton.agents.messages import scenario_of
from baton.context.usage import Usage
from baton.errors import ConfigError
from baton.models.price_config import missing_price_lines
from baton.models.pricing import PRICES, ModelPrice, cost_usd, price_for
from baton.pipeline.scenario import ScenarioConfig, ScenarioRecord
from baton.pipeline.scenario_store import ScenarioStore
from baton.runtime.backoff import Backoff
from baton.runtime.log_files import rotated_files

if TYPE_CHECKING:
    from baton.pipeline.config import BatonConfig
    from baton.pipeline.redis_spend import SharedSpend

log = get_logger(__name__)

# Retrying a shared addition Redis did not take; at close, how long the last ones may take.
_RETRY = Backoff(initial=0.1, maximum=5.0)
_DRAIN = 5.0


@dataclass(slots=True)
class RunSpend:
    """One scenario run's model calls: the sum of the known costs, and how many were unknown."""

    known_usd: float = 0.0
    unknown_calls: int = 0

    @property
    def usd(self) -> float | None:
        """The run's cost so far; None when a call's cost is unknown."""
        return None if self.unknown_calls else self.known_usd

    def merge(self, later: RunSpend) -> None:
        """Take in totals read from the shared ledger: they only grow, so the larger one is
        the later (an announcement may arrive after a fresher read)."""
        self.known_usd = max(self.known_usd, later.known_usd)
        self.unknown_calls = max(self.unknown_calls, later.unknown_calls)


# What a shared ledger sends to Redis, in order: ("add", conversation, cost) or ("cap", ...).
_Change = tuple[str, str, float | None]


class SpendLedger:
    """Spend per scenario run (keyed by its conversation id) and the cap each run has.

    With `shared`, the runs' totals and caps live in Redis for every process: `add` and
    `set_cap` queue their change, which `sharing` sends in order while it is open; `check`
    reads the run's total and cap there; and what this ledger shows is kept current from
    every process's additions (`sharing(follow=True)`). `shares_caps` is False in a process
    that does not host the Scheduler: only the Scheduler's caps are shared.
    """

    def __init__(
        self,
        prices: Mapping[str, ModelPrice] = PRICES,
        *,
        default_cap: float | None = None,
        models: Mapping[str, str] | None = None,
        shared: SharedSpend | None = None,
        shares_caps: bool = True,
    ) -> None:
        self.prices = prices
        self.default_cap = default_cap  # baton.toml's `[scenario] max_cost_usd`
        # Each agent's model, by the name its calls are logged under: what a cap must price.
        self.models = dict(models or {})
        self.shared = shared
        self.shares_caps = shares_caps
        self._runs: dict[str, RunSpend] = {}
        self._caps: dict[str, float] = {}
        # What `sharing` sends, queued from the start: caps set before it opens go first.
        self._outbox: MemoryObjectSendStream[_Change] | None = None
        self._changes: MemoryObjectReceiveStream[_Change] | None = None
        if shared is not None:
            self._outbox, self._changes = anyio.create_memory_object_stream[_Change](float("inf"))
        self._queued = 0
        self._sent = 0
        self._sent_more: anyio.Event | None = None  # made by the first waiter

    def add(self, conversation: str, cost: float | None) -> None:
        """Count one call's `cost_usd` (None: unknown) against its run."""
        run = self._runs.setdefault(conversation, RunSpend())
        if cost is None:
            run.unknown_calls += 1
        else:
            run.known_usd += cost
        self._share("add", conversation, cost)

    def spend(self, conversation: str) -> RunSpend:
        """What the run has spent (nothing yet: zero)."""
        return self._runs.get(conversation) or RunSpend()

    def set_cap(self, conversation: str, cap: float | None) -> None:
        """The run's cap in USD (None: no cap), as its scenario.toml or baton.toml sets it."""
        if cap is None:
            self._caps.pop(conversation, None)
        else:
            self._caps[conversation] = cap
        if self.shares_caps:
            self._share("cap", conversation, cap)

    def cap_of(self, config: ScenarioConfig) -> float | None:
        """A scenario's cap: its `[scenario] max_cost_usd`, else baton.toml's; None: none."""
        own = config.scenario.max_cost_usd
        return own if own is not None else self.default_cap

    def set_caps(self, records: Iterable[ScenarioRecord]) -> None:
        """Each run's cap as its saved record has it, before any agent resumes a round (a
        run stopped by its cap stays stopped until the Scheduler resumes it)."""
        for record in records:
            self.set_cap(record.conversation, self.cap_of(record.config))

    def cap(self, conversation: str) -> float | None:
        """The run's cap; None when it has none."""
        return self._caps.get(conversation)

    async def check(self, conversation: str) -> None:
        """`SpendCapReachedFailure` when the run has spent its cap: its next call must wait.
        Shared, the total and the cap are Redis's, this process's additions sent first."""
        if self.shared is None:
            cap = self._caps.get(conversation)
        else:
            await self.shared_up_to_date()
            run, cap = await self.shared.read(conversation)
            self._runs.setdefault(conversation, RunSpend()).merge(run)
        if cap is None:
            return
        spent = self.spend(conversation).known_usd
        if spent >= cap:
            raise SpendCapReachedFailure(scenario_of(conversation), spent, cap)

    # --- the shared ledger ---------------------------------------------------------------------

    def _share(self, kind: str, conversation: str, value: float | None) -> None:
        if self._outbox is None:
            return
        self._queued += 1
        self._outbox.send_nowait((kind, conversation, value))

    def heard(self, conversation: str, run: RunSpend) -> None:
        """A run's totals as the shared ledger has them (another process added to them)."""
        self._runs.setdefault(conversation, RunSpend()).merge(run)

    async def shared_up_to_date(self) -> None:
        """Return once every addition and cap this process made so far is in Redis: before a
        check, and before the Scheduler saves a record whose work order a worker may take."""
        target = self._queued
        while self._sent < target:
            if self._sent_more is None:
                self._sent_more = anyio.Event()
            await self._sent_more.wait()

    @asynccontextmanager
    async def sharing(self, *, follow: bool = False) -> AsyncIterator[SpendLedger]:
        """For the block, send what this process adds to the shared ledger (in order,
        retried while Redis does not answer) and, with `follow`, hear what every other
        process adds; without `shared`, nothing to do. On exit what is left is sent for
        `_DRAIN` seconds at most."""
        shared, outbox, changes = self.shared, self._outbox, self._changes
        if shared is None or outbox is None or changes is None:
            yield self
            return
        failure: BaseException | None = None
        following = anyio.CancelScope()
        async with anyio.create_task_group() as group:
            group.start_soon(self._send, shared, changes)
            if follow:
                group.start_soon(self._follow, shared, following)
            try:
                yield self
            except BaseException as error:  # noqa: BLE001 - re-raised below
                # Out of the task group, or it would reach the caller in an ExceptionGroup.
                failure = error
            finally:
                following.cancel()
                outbox.close()
                group.cancel_scope.deadline = anyio.current_time() + _DRAIN
        if failure is not None:
            raise failure

    async def _follow(self, shared: SharedSpend, scope: anyio.CancelScope) -> None:
        with scope:
            await shared.follow(self.heard)

    async def _send(self, shared: SharedSpend, changes: MemoryObjectReceiveStream[_Change]) -> None:
        from redis.exceptions import RedisError  # noqa: PLC0415 - only a shared ledger has Redis

        async with changes:
            async for kind, conversation, value in changes:
                attempt = 0
                while True:
                    try:
                        if kind == "add":
                            self.heard(conversation, await shared.add(conversation, value))
                        else:
                            await shared.set_cap(conversation, value)
                        break
                    except (RedisError, OSError) as exc:
                        log.warning("spend.share_failed", conversation=conversation, error=str(exc))
                        await anyio.sleep(_RETRY.delay(attempt))
                        attempt += 1
                self._sent += 1
                sent, self._sent_more = self._sent_more, None
                if sent is not None:
                    sent.set()

    def check_covers(self, conversation: str, cap: float | None) -> None:
        """`ConfigError` when `cap` does not cover what the run spent: resumed under it, the
        run would stop again before its first call."""
        spent = self.spend(conversation).known_usd
        if cap is not None and spent >= cap:
            scenario = scenario_of(conversation)
            raise ConfigError(
                f"scenario {scenario!r} has spent ${spent:.4f}, which its ${cap:.4f} cap "
                f"does not cover: raise max_cost_usd in scenarios/{scenario}/scenario.toml "
                "([scenario] in baton.toml for the default) and submit it again"
            )

    def check_counted(self, cap: float | None, where: str) -> None:
        """`ConfigError` when `cap` (set in `where`) is a cap and an agent's model lacks a
        price: its calls would count as nothing against the cap. The message names each such
        model and the `[prices."<model-id>"]` lines that would price it."""
        if cap is None:
            return
        actors: dict[str, list[str]] = {}
        for actor, model in self.models.items():
            if not price_for(model, self.prices).known:
                actors.setdefault(model, []).append(actor)
        if not actors:
            return
        named = ", ".join(f"{model!r} ({', '.join(names)})" for model, names in actors.items())
        lines = " ".join(
            f"`{line}`"
            for model in actors
            for line in missing_price_lines(model, price_for(model, self.prices))
        )
        raise ConfigError(
            f"max_cost_usd is set in {where}, but baton lacks prices for "
            f"{'models' if len(actors) > 1 else 'model'} {named}: their calls would count as "
            f"nothing against the cap — add to baton.toml, in USD per million tokens: {lines} "
            '(or remove max_cost_usd; docs/models.md, "Prices")'
        )

    def check_scenario_counted(self, config: ScenarioConfig, scenario: str) -> None:
        """`check_counted` for a scenario's cap, its own or baton.toml's: at its submit."""
        own = config.scenario.max_cost_usd
        where = f"scenarios/{scenario}/scenario.toml" if own is not None else "baton.toml"
        self.check_counted(self.cap_of(config), where)

    def read_token_log(self, path: Path) -> None:
        """Add the `model.call` lines of the token log at `path` (its rotated files first);
        a line without `cost_usd` (written before it existed) is priced from its tokens."""
        for file in [*rotated_files(path), path]:
            try:
                # Line by line: the log and its backups may hold hundreds of megabytes.
                with file.open(encoding="utf-8", errors="replace") as lines:
                    for line in lines:
                        record = _call_record(line)
                        if record is not None:
                            cost = record_cost(record, self.prices)
                            self.add(str(record["conversation"]), cost)
            except OSError:
                continue  # a log that is not there (yet) has spent nothing


def record_cost(record: Mapping[str, Any], prices: Mapping[str, ModelPrice]) -> float | None:
    """A `model.call` line's cost: its `cost_usd` when it has one, else priced from its tokens."""
    if "cost_usd" in record:
        cost = record["cost_usd"]
        return float(cost) if isinstance(cost, int | float) else None
    try:
        usage = Usage(
            input_tokens=int(record.get("input_tokens") or 0),
            cache_creation_input_tokens=int(record.get("cache_creation_input_tokens") or 0),
            cache_read_input_tokens=int(record.get("cache_read_input_tokens") or 0),
            output_tokens=int(record.get("output_tokens") or 0),
        )
    except (TypeError, ValueError):
        return None
    return cost_usd(str(record.get("model") or "?"), usage, prices=prices)


def _call_record(line: str) -> dict[str, Any] | None:
    if '"model.call"' not in line:
        return None  # most lines are not calls: skip the JSON parse
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(record, dict) or record.get("event") != "model.call":
        return None
    if not isinstance(record.get("conversation"), str):
        return None
    return record


async def load_spend(
    config: BatonConfig,
    store: ScenarioStore,
    token_log: Path | None,
    models: Mapping[str, str] | None = None,
    *,
    shared: SharedSpend | None = None,
    hosts_scheduler: bool = True,
) -> SpendLedger:
    """The ledger of a pipeline whose agents call `models` (actor → model name): `config`'s
    prices and default cap, what each run spent before this process started (read from
    `token_log`; from Redis when `shared`), and the cap of each run `store` holds (set by the
    process that `hosts_scheduler`; the others read the caps it shares). `ConfigError` when
    baton.toml sets a cap that one of `models` has no price for (`check_counted`).
    Shared, the caps set here are sent once the caller opens `sharing()`."""
    spend = SpendLedger(
        config.price_table,
        default_cap=config.scenario.max_cost_usd,
        models=models,
        shared=shared,
        shares_caps=hosts_scheduler,
    )
    spend.check_counted(spend.default_cap, "baton.toml")
    if shared is not None:
        for conversation, run in (await shared.load()).items():
            spend.heard(conversation, run)
    elif token_log is not None:
        await anyio.to_thread.run_sync(spend.read_token_log, token_log)
    if hosts_scheduler:
        spend.set_caps((await store.load_all()).values())
    return spend
