"""`SpendLedger`: what each scenario run has spent on model calls, and its cap.

Every `model.call` line's `cost_usd` is added to its conversation's total (a scenario run's
agents and the Scheduler's task summaries share the run's conversation id); on start the
totals are read back from the token log, so a restarted process knows what was spent. An
agent asks `check` before each call of a scenario round: once the run has spent its cap
(`spent >= cap`), the call is not made (README.md, "Configuration", `max_cost_usd`).

A call whose cost is unknown (no price) could count only as nothing, so a cap is refused
where an agent's model has no price: at start for baton.toml's cap, at submit for a
scenario's own (README.md, "Spend cap"). Without a cap, such a call's cost is "unknown".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from baton.agents.errors import SpendCapReachedFailure
from baton.agents.messages import scenario_of
from baton.context.usage import Usage
from baton.errors import ConfigError
from baton.models.price_config import missing_price_lines
from baton.models.pricing import PRICES, ModelPrice, cost_usd, price_for
from baton.pipeline.scenario import ScenarioConfig, ScenarioRecord, ScenarioStore
from baton.runtime.log_files import rotated_files

if TYPE_CHECKING:
    from baton.pipeline.config import BatonConfig


@dataclass(slots=True)
class RunSpend:
    """One scenario run's model calls: the sum of the known costs, and how many were unknown."""

    known_usd: float = 0.0
    unknown_calls: int = 0

    @property
    def usd(self) -> float | None:
        """The run's cost so far; None when a call's cost is unknown."""
        return None if self.unknown_calls else self.known_usd


class SpendLedger:
    """Spend per scenario run (keyed by its conversation id) and the cap each run has."""

    def __init__(
        self,
        prices: Mapping[str, ModelPrice] = PRICES,
        *,
        default_cap: float | None = None,
        models: Mapping[str, str] | None = None,
    ) -> None:
        self.prices = prices
        self.default_cap = default_cap  # baton.toml's `[scenario] max_cost_usd`
        # Each agent's model, by the name its calls are logged under: what a cap must price.
        self.models = dict(models or {})
        self._runs: dict[str, RunSpend] = {}
        self._caps: dict[str, float] = {}

    def add(self, conversation: str, cost: float | None) -> None:
        """Count one call's `cost_usd` (None: unknown) against its run."""
        run = self._runs.setdefault(conversation, RunSpend())
        if cost is None:
            run.unknown_calls += 1
        else:
            run.known_usd += cost

    def spend(self, conversation: str) -> RunSpend:
        """What the run has spent (nothing yet: zero)."""
        return self._runs.get(conversation) or RunSpend()

    def set_cap(self, conversation: str, cap: float | None) -> None:
        """The run's cap in USD (None: no cap), as its scenario.toml or baton.toml sets it."""
        if cap is None:
            self._caps.pop(conversation, None)
        else:
            self._caps[conversation] = cap

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

    def check(self, conversation: str) -> None:
        """`SpendCapReachedFailure` when the run has spent its cap: its next call must wait."""
        cap = self._caps.get(conversation)
        if cap is None:
            return
        spent = self.spend(conversation).known_usd
        if spent >= cap:
            raise SpendCapReachedFailure(scenario_of(conversation), spent, cap)

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
    workspace: Path,
    token_log: Path | None,
    models: Mapping[str, str] | None = None,
) -> SpendLedger:
    """The ledger of a pipeline whose agents call `models` (actor → model name): `config`'s
    prices and default cap, what each run spent before this process started (read from
    `token_log`), and each saved run's cap. `ConfigError` when baton.toml sets a cap that
    one of `models` has no price for (`SpendLedger.check_counted`)."""
    spend = SpendLedger(config.price_table, default_cap=config.scenario.max_cost_usd, models=models)
    spend.check_counted(spend.default_cap, "baton.toml")
    if token_log is not None:
        await anyio.to_thread.run_sync(spend.read_token_log, token_log)
    spend.set_caps((await ScenarioStore(workspace).load_all()).values())
    return spend
