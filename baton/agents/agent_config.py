"""An agent actor's configuration: its model, thinking and context budget.

It lives with the actors that use it; `baton.toml`'s `[actors.<name>]` tables are parsed into
it by the runtime's config loader.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, Protocol, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from baton._write_rules import write_path_problem
from baton.agents.prompt_files import path_problem
from baton.context.ledger_patterns import compile_pattern
from baton.context.server_edits import MIN_COMPACT_TRIGGER
from baton.context.strategy import BudgetFields

StrategyName = Literal["summarize", "sliding_window", "extract_state", "server"]
ToolResultClearing = Literal["client", "server"]
FactPattern = Annotated[str, AfterValidator(lambda p: compile_pattern(p).pattern)]
"""An id pattern of `fact_patterns`: a regular expression that cannot match nothing."""


class ContextReporter(Protocol):
    """Where an agent reports how full its context is (the runtime's status registry)."""

    def register(self, actor: str, provider: Callable[[], Mapping[str, int]]) -> None: ...

    def unregister(
        self, actor: str, provider: Callable[[], Mapping[str, int]] | None = None
    ) -> None: ...


class TokenSink(Protocol):
    """Where an agent's token-log events go (the runtime's `TokenLog`)."""

    def emit(self, event: str, **fields: Any) -> None: ...


class AgentConfig(BudgetFields):
    """One agent actor's model, thinking setting and context budget.

    The budget keys, their checks and their error messages are `ContextBudget`'s
    (`BudgetFields`); the rest is how the agent runs.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    strategy: StrategyName = "summarize"
    max_steps: int = Field(50, ge=1)
    load_budget_tokens: int = Field(40_000, ge=1)
    tool_timeout_s: float = Field(60.0, gt=0)
    max_concurrency: int = Field(8, ge=1)
    max_concurrent_keys: int = Field(
        8,
        ge=1,
        le=1024,
        description="conversations (scenario runs) the agent works on at once",
    )
    passivate_after_s: float = Field(
        600.0,
        ge=0,
        description="seconds a conversation may sit idle before it leaves memory; its next "
        'message reads it back from the journal (docs/context.md, "Idle conversations"); '
        "0: kept in memory for the life of the process",
    )
    system_prompt: str | None = Field(
        None, description="workspace-relative path of a system prompt replacing the shipped one"
    )
    fact_patterns: list[FactPattern] = Field(
        default_factory=list,
        description="regular expressions of ids to keep in the key-fact ledger (docs/context.md)",
    )
    stride: int = Field(
        1,
        ge=1,
        description="summarize, extract_state: steps the whole part may grow by before older "
        'tool results are stripped in one batch (docs/context.md, "summarize")',
    )
    strip_batch_tokens: int | None = Field(
        None,
        ge=1,
        description="summarize: strip sooner, once the steps past the newest N hold more "
        "than this many tokens",
    )

    tool_result_clearing: ToolResultClearing = Field(
        "client",
        description="client: baton strips older tool results in batches; server: the Messages "
        'API clears them (`clear_tool_uses_20250919`; docs/context.md, "Server-side context '
        'management")',
    )

    min_compaction_gain: float = Field(
        0.1,
        ge=0,
        lt=1,
        description="share of compact_threshold a compaction must free; after two in a row "
        "that free less the agent stops compacting (docs/context.md)",
    )

    @property
    def strategy_options(self) -> dict[str, Any]:
        """The options `strategy` takes from this table; a strategy ignores the others, so the
        built-in agents' defaults do not stop a table that picks another strategy."""
        if self.strategy in ("summarize", "server"):
            return {
                "stride": self.stride,
                "strip_batch_tokens": self.strip_batch_tokens,
                "tool_result_clearing": self.tool_result_clearing,
            }
        if self.strategy == "extract_state":
            return {"stride": self.stride}
        return {}

    @model_validator(mode="after")
    def _server_side_fits(self) -> Self:
        if self.strategy == "server" and self.compact_threshold < MIN_COMPACT_TRIGGER:
            raise ValueError(
                f'strategy = "server" needs compact_threshold >= {MIN_COMPACT_TRIGGER:,}, the '
                f"least the Messages API compacts at (it is {self.compact_threshold:,})"
            )
        if self.tool_result_clearing == "server" and self.strategy not in ("summarize", "server"):
            raise ValueError(
                f'tool_result_clearing = "server" works with strategy = "summarize" or '
                f'"server", not {self.strategy!r}'
            )
        return self

    @field_validator("system_prompt")
    @classmethod
    def _inside_the_workspace(cls, value: str | None) -> str | None:
        # Checked by spelling here; where a link leads is checked when the file is read.
        problem = None if value is None else path_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value


class SandboxConfig(BaseModel):
    """Where agents' `Write` may write besides their scenario's folder (docs/handoffs.md,
    "Sandbox"); an entry that leaves the workspace or names code or baton's files is refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    write_paths: tuple[str, ...] = ()

    @field_validator("write_paths")
    @classmethod
    def _writable(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        problems = [p for p in map(write_path_problem, value) if p is not None]
        if problems:
            raise ValueError("; ".join(problems))
        return value
