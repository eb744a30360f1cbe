"""What a finished run would have cost under other context policies (`baton cost --what-if`;
docs/context.md, "What a run would have cost"), per agent: its conversations' journals
replayed under each policy (`cost_replay`), every request billed through the prompt cache
under five-minute and one-hour lifetimes, beside the bill the token log holds.

Each agent's requests open with its system prompt (the scenario's own, or the role's) and
tools, rebuilt from the workspace's `baton.toml` as `baton run` builds them. Tokens are priced
at the model the run called, or, for the offline models, which cost nothing, at the agent's
configured model. The run's own policy, replayed, bills what the token log logged (offline,
to the token: both count with the same estimator and cache simulation); the difference is
shown beside it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, computed_field

from baton.agents.agent_config import AgentConfig
from baton.agents.agent_setup import Handoff, ToolHooks
from baton.agents.journal import JournalStore
from baton.agents.messages import MAIN, scenario_of
from baton.agents.prompt_files import read_scenario_prompt
from baton.context.payload import ToolSpec
from baton.context.prompt_cache import DEFAULT_MIN_CACHE_TOKENS
from baton.context.strategy import ContextBudget
from baton.memory import MemoryStore
from baton.memory.jsonl import JsonlMemoryBackend
from baton.models.pricing import FREE, price_for
from baton.models.rules import rules_for
from baton.models.scripted import OFFLINE_MODEL_NAME
from baton.pipeline._replay_bill import VARIANTS, Pricing, Tally, Variant
from baton.pipeline._replay_calls import LoggedCall, Prefix
from baton.pipeline.config import BatonConfig
from baton.pipeline.cost_replay import ConversationReplay
from baton.pipeline.roles import role_toolbox, system_prompt
from baton.pipeline.summaries import summary_schema_for
from baton.pipeline.what_if_policies import Policy, policies_for

CacheLabel = Literal["5m", "1h", "1h+5m"]
"""A row's cache lifetimes: every breakpoint 5 minutes, every one an hour, or as baton
places them (an hour for the parts re-sent after a wait, 5 minutes for the newest message;
docs/context.md, "Prompt-cache breakpoints")."""


class Bill(BaseModel):
    """Calls and tokens of one bill: input-token equivalents (`billed`: uncached 1x, cache
    writes 1.25x for five minutes and 2x for an hour, cache reads 0.1x), output, and USD
    (None when a price is unknown)."""

    model_config = ConfigDict(frozen=True)

    calls: int
    summary_calls: int
    input_tokens: int
    cache_write_5m: int
    cache_write_1h: int
    cache_read: int
    output_tokens: int
    billed: float
    cost_usd: float | None

    @classmethod
    def of(cls, tally: Tally) -> Bill:
        """The bill `tally` sums."""
        return cls(
            calls=tally.calls,
            summary_calls=tally.summary_calls,
            input_tokens=tally.input_tokens,
            cache_write_5m=tally.cache_write_5m,
            cache_write_1h=tally.cache_write_1h,
            cache_read=tally.cache_read,
            output_tokens=tally.output_tokens,
            billed=round(tally.billed, 1),
            cost_usd=None if tally.cost_usd is None else round(tally.cost_usd, 6),
        )


class PolicyRow(BaseModel):
    """One policy under one cache lifetime, and its ratio to the run's own policy (by cost,
    or by billed tokens when a price is unknown)."""

    model_config = ConfigDict(frozen=True)

    policy: str
    label: str
    cache: CacheLabel
    used: bool
    bill: Bill
    ratio: float | None
    notes: list[str]


class AgentWhatIf(BaseModel):
    """One agent's bills: the logged one and each policy's, the run's policy first."""

    model_config = ConfigDict(frozen=True)

    actor: str
    priced_at: str
    logged_models: list[str]
    conversations: list[str]
    logged: Bill
    rows: list[PolicyRow]
    difference_billed_pct: float | None
    difference_cost_pct: float | None
    notes: list[str]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def priced_as_configured(self) -> bool:
        """Whether its tokens are priced at the configured model, not the one logged."""
        return self.priced_at not in self.logged_models


def _percent(replayed: float | None, logged: float | None) -> float | None:
    if replayed is None or logged is None or logged == 0:
        return None
    return round(100 * (replayed - logged) / logged, 3)


def logged_bill(calls: Sequence[LoggedCall], pricing: Pricing) -> Tally:
    """What the token log's `calls` billed, priced as the replay is."""
    tally = Tally()
    for call in calls:
        tally.add(call.usage, pricing.cost(call.usage), summary=call.summary)
    return tally


def pricing_for(
    actor: str, config: AgentConfig, calls: Sequence[LoggedCall], prices: Any
) -> tuple[Pricing, int]:
    """The model an agent's tokens are priced at, and the least prefix the cache keeps for
    it: the model it called (the most calls), or its configured model when that is one of
    the offline models, which cost nothing (docs/models.md, "Prices")."""
    counts = Counter(call.model for call in calls if call.actor == actor)
    logged = counts.most_common(1)[0][0] if counts else None
    if logged is None or price_for(logged, prices) == FREE:
        # The offline model bills through the same cache with the default minimum.
        return Pricing(config.model, prices), DEFAULT_MIN_CACHE_TOKENS
    return Pricing(logged, prices), rules_for(logged).min_cache_tokens


async def _no_delivery(package: Handoff) -> None:
    del package  # the tools are listed, never run


def _no_paths(paths: list[str]) -> None:
    del paths


def _tools_and_prompt(
    workspace: Path, config: BatonConfig, actor: str
) -> tuple[list[ToolSpec], str]:
    """The role's tools (as its requests list them) and its prompt: the shipped one, or the
    file `system_prompt` names. Blocks: it may read that file."""
    agent = config.agent(actor)
    memory = None
    if config.memory.enabled:
        # Only the tools' descriptions are wanted: the store is never opened.
        memory = MemoryStore(JsonlMemoryBackend(workspace / ".baton" / "unused.jsonl"))
    build = role_toolbox(
        actor,
        workspace,
        agent,
        write_paths=config.sandbox.write_paths,
        memory=memory,
        recall_limit=config.memory.recall_limit,
    )
    tools = build(ToolHooks(_no_delivery, _no_paths)).specs()
    return tools, system_prompt(actor, agent, workspace)


async def agent_prefix(
    workspace: Path, config: BatonConfig, actor: str, conversation: str
) -> Prefix:
    """The system prompt and tools `actor`'s requests in `conversation` open with, as
    `baton run` builds them from the workspace (the scenario's own prompt, if it has one)."""
    tools, prompt = await anyio.to_thread.run_sync(_tools_and_prompt, workspace, config, actor)
    if conversation != MAIN:
        own = await read_scenario_prompt(workspace, None, scenario_of(conversation), actor)
        prompt = own if own is not None else prompt
    return Prefix(prompt, tools)


def _rows(
    policies: Sequence[Policy],
    tallies: Mapping[str, dict[Variant, Tally]],
    lifetimes: Mapping[str, set[str]],
    notes: Mapping[str, list[str]],
) -> list[PolicyRow]:
    """Each policy's rows: every breakpoint five minutes and an hour, and as its requests
    placed them when they mixed the two (a row the same as another is left out)."""
    rows: list[PolicyRow] = []
    for policy in policies:
        named = lifetimes[policy.key] or {"5m"}
        composed: CacheLabel = "1h+5m" if len(named) > 1 else ("1h" if "1h" in named else "5m")
        shown: list[tuple[Variant, CacheLabel]] = [
            ("composed", composed),
            ("5m", "5m"),
            ("1h", "1h"),
        ]
        for variant, label in shown:
            if variant != "composed" and label == composed:
                continue
            rows.append(
                PolicyRow(
                    policy=policy.key,
                    label=policy.label,
                    cache=label,
                    used=policy.used and variant == "composed",
                    bill=Bill.of(tallies[policy.key][variant]),
                    ratio=None,
                    notes=notes[policy.key],
                )
            )
    return rows


def _with_ratios(rows: list[PolicyRow]) -> list[PolicyRow]:
    used = next(row for row in rows if row.used)
    by_cost = all(row.bill.cost_usd is not None for row in rows) and bool(used.bill.cost_usd)

    def ratio(row: PolicyRow) -> float | None:
        if by_cost:
            return round(row.bill.cost_usd / used.bill.cost_usd, 4)  # type: ignore[operator]
        return round(row.bill.billed / used.bill.billed, 4) if used.bill.billed else None

    return [row.model_copy(update={"ratio": ratio(row)}) for row in rows]


async def agent_what_if(
    workspace: Path,
    config: BatonConfig,
    journal: JournalStore,
    actor: str,
    *,
    conversations: Sequence[str],
    calls: Sequence[LoggedCall],
) -> AgentWhatIf:
    """`actor`'s bills over `conversations` (their journals and `calls`, the token log's)."""
    agent = config.agent(actor)
    calls = [c for c in calls if c.actor == actor and c.conversation in conversations]
    pricing, min_cache = pricing_for(actor, agent, calls, config.price_table)
    policies = policies_for(agent, summary_schema_for(actor))
    budget = ContextBudget.model_validate(agent, from_attributes=True)
    # The offline model's cache lives in its process, the API's across a restart.
    scripted = bool(calls) and all(c.model == OFFLINE_MODEL_NAME for c in calls)
    tallies = {p.key: {v: Tally() for v in VARIANTS} for p in policies}
    lifetimes: dict[str, set[str]] = {p.key: set() for p in policies}
    policy_notes: dict[str, list[str]] = {p.key: [] for p in policies}
    notes: list[str] = []
    for conversation in conversations:
        records = await journal.read(actor, conversation)
        own = [c for c in calls if c.conversation == conversation]
        if not own:
            notes.append(f"{conversation}: no model.call line in the token log")
        prefix = await agent_prefix(workspace, config, actor, conversation)
        for policy in policies:
            replay = ConversationReplay(
                actor,
                conversation,
                new_strategy=policy.build,
                budget=budget,
                prefix=prefix,
                calls=own,
                pricing=pricing,
                min_cache_tokens=min_cache,
                min_compaction_gain=agent.min_compaction_gain,
                cache_per_process=scripted,
            )
            replayed = await replay.run(records)
            for variant, tally in replayed.tallies.items():
                tallies[policy.key][variant].merge(tally)
            lifetimes[policy.key] |= replayed.lifetimes
            policy_notes[policy.key] += [f"{conversation}: {note}" for note in replayed.notes]
            if policy.used and replayed.unfinished:
                notes.append(f"{conversation}: its last round had not ended (still running?)")
    rows = _with_ratios(_rows(policies, tallies, lifetimes, policy_notes))
    used = next(row for row in rows if row.used)
    logged_total = Bill.of(logged_bill(calls, pricing))
    return AgentWhatIf(
        actor=actor,
        priced_at=pricing.model,
        logged_models=sorted({c.model for c in calls}),
        conversations=list(conversations),
        logged=logged_total,
        rows=rows,
        difference_billed_pct=_percent(used.bill.billed, logged_total.billed),
        difference_cost_pct=_percent(used.bill.cost_usd, logged_total.cost_usd),
        notes=notes,
    )
