"""What an agent is made of: its role, config, model, prompt, journal, token sink and tools,
and whom its rounds report to.

The same setup makes an `AgentActor` or a loop another actor hosts (the pipeline's Scheduler
writes its task summaries with one). An agent knows no pipeline: the actor that assigns it
rounds (the Scheduler) hears how they go through `RoundReports`, and the runs' spend and cap
are a `Spending` handed in (docs/architecture.md, "agents/").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from baton.agents.agent_config import AgentConfig, ContextReporter, TokenSink
from baton.agents.errors import SpendCapReachedFailure
from baton.agents.journal import JournalStore
from baton.agents.tools import Toolbox
from baton.context.ledger import KeyFact
from baton.context.summary_format import GenericSummary, SummaryBase
from baton.errors import BatonError
from baton.models.pricing import ModelPrice
from baton.models.protocol import Model, Purpose
from baton.models.retry import ModelRetry
from baton.runtime.ref import ActorRef
from baton.storage.protocol import Storage


class Handoff(Protocol):
    """A package an agent's handoff tool delivers: what it is, as JSON."""

    @property
    def handoff_type(self) -> str: ...

    def model_dump(self, *, mode: str = ...) -> dict[str, Any]: ...


Deliver = Callable[[Handoff], Awaitable[None]]
"""Hands a checked package to the actor that assigned the round (through the agent)."""
RegisterPaths = Callable[[list[str]], Awaitable[None] | None]
"""Registers paths in the round's key-fact ledger."""


@dataclass(frozen=True, slots=True)
class RoundOf:
    """Which round a report is about: the conversation's scenario, the conversation, the
    agent, and the request that opened the round (the Scheduler's dispatch id)."""

    scenario: str
    conversation: str
    agent: str
    dispatch_id: str | None


class RoundReports(Protocol):
    """How an agent's scenario rounds report to the actor that assigned them. Each method
    tells that actor from `sender` (the agent's own ref); a report that cannot be delivered
    raises what the runtime raises (`ActorDeadError`, ...), the agent decides what that means."""

    @property
    def target(self) -> str:
        """The actor the reports go to (named in `handoff.sent`)."""
        ...

    async def handed_off(
        self, sender: ActorRef, round_: RoundOf, handoff_id: str, package: Handoff
    ) -> None:
        """The round's handoff tool delivered `package` (`handoff_id` stable across retries)."""
        ...

    async def ended(self, sender: ActorRef, round_: RoundOf, text: str) -> None:
        """The round ended without a handoff, with this final text."""
        ...

    async def waiting(
        self, sender: ActorRef, round_: RoundOf, reason: str | None, retry_at: datetime | None
    ) -> None:
        """The round waits for its model until `retry_at` (`reason` None: no longer)."""
        ...

    async def refused(self, sender: ActorRef, round_: RoundOf, error: BatonError) -> None:
        """The round cannot go on, for `error`: no one will finish it."""
        ...

    async def spend_cap_reached(
        self, sender: ActorRef, round_: RoundOf, reached: SpendCapReachedFailure
    ) -> None:
        """The round stopped before a call its run cannot pay for."""
        ...

    def facts(self, package: Handoff) -> list[KeyFact]:
        """The ids and paths `package` names, for the sender's key-fact ledger."""
        ...


class Spending(Protocol):
    """Each scenario run's spend and cap (keyed by conversation), and the prices
    `cost_usd` is computed with."""

    @property
    def prices(self) -> Mapping[str, ModelPrice]: ...

    async def check(self, conversation: str) -> None:
        """`SpendCapReachedFailure` once the run has spent its cap (asked of a ledger every
        process shares, with a Redis mailbox: README.md, "Scaling out")."""
        ...

    def add(self, conversation: str, cost: float | None) -> None:
        """Count one call's `cost_usd` (None: unknown) against its run."""
        ...


@dataclass(frozen=True)
class ToolHooks:
    """What an agent's handoff tools call: delivery and the key-fact ledger; and where its
    file tools find the files (`AgentSetup.storage`)."""

    deliver: Deliver
    register_paths: RegisterPaths
    storage: Storage | None = None


@dataclass(frozen=True)
class AgentSetup:
    """Everything an agent actor is made of; `tools` builds its toolbox from the hooks."""

    role: str
    config: AgentConfig
    model: Model
    system_prompt: str
    journal: JournalStore
    token_log: TokenSink
    tools: Callable[[ToolHooks], Toolbox] | None = None
    # Whom scenario rounds report to; None: nobody (the rounds of a conversation that no
    # one assigned, or a loop its host drives itself).
    reports: RoundReports | None = None
    purpose: Purpose = "turn"
    workspace: Path | None = None
    context_reporter: ContextReporter | None = None
    strategy_options: Mapping[str, Any] = field(default_factory=dict)
    # What its compactions keep (docs/context.md, "Summary schemas").
    summary_schema: type[SummaryBase] = GenericSummary
    # Id formats found in user turns and tool results and kept in the key-fact ledger,
    # besides the config's own `fact_patterns` (docs/context.md, "Key-fact ledger").
    fact_patterns: Sequence[str] = ()
    # How a round waits out an unavailable model; None: the failure is raised (the Scheduler
    # falls back instead of waiting).
    model_retry: ModelRetry | None = field(default_factory=ModelRetry)
    # Each scenario run's spend and cap, and the prices `cost_usd` is computed with; None:
    # the package's prices and no cap (README.md, "Configuration", `max_cost_usd`).
    spend: Spending | None = None
    # Where the scenarios' files are when they are not the workspace folder: an S3-compatible
    # bucket shared by processes on several hosts (docs/storage.md, "What is stored where");
    # None: the workspace folder, read and written as docs/handoffs.md, "Sandbox", says.
    storage: Storage | None = None
