"""What an agent is made of: its role, config, model, prompt, journal, token sink and tools.

The same setup makes an `AgentActor` (Init, Execute) or the Scheduler's task-summary loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton.agents.agent_config import AgentConfig, ContextReporter, TokenSink
from baton.agents.journal import JournalStore
from baton.agents.tools import Toolbox
from baton.models.protocol import Model, Purpose
from baton.models.retry import ModelRetry
from baton.pipeline.handoff_tools import Deliver, RegisterPaths
from baton.pipeline.messages import SCHEDULER
from baton.pipeline.spend import SpendLedger


@dataclass(frozen=True)
class ToolHooks:
    """What an agent's handoff tools call: delivery to the Scheduler and the key-fact ledger."""

    deliver: Deliver
    register_paths: RegisterPaths


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
    handoff_to: str = SCHEDULER
    purpose: Purpose = "turn"
    workspace: Path | None = None
    context_reporter: ContextReporter | None = None
    strategy_options: Mapping[str, Any] = field(default_factory=dict)
    # How a round waits out an unavailable model; None: the failure is raised (the Scheduler
    # falls back instead of waiting).
    model_retry: ModelRetry | None = field(default_factory=ModelRetry)
    # Each scenario run's spend and cap, and the prices `cost_usd` is computed with; None:
    # the package's prices and no cap (README.md, "Configuration", `max_cost_usd`).
    spend: SpendLedger | None = None
