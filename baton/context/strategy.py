"""The `ContextStrategy` protocol, the budget it works within, and what it is given.

The agent loop, per round:

    payload = strategy.compose_payload(system, tools, conversation)
    response = await model.create(payload)
    conversation.append_step(response.content, tool_results, response.usage)   # journal it
    strategy.on_turn_complete(conversation)
    if strategy.should_compact(conversation, budget):
        compaction = await strategy.compact(conversation, summarize)           # journal it

`summarize` is the actor's: it sends the compaction payload to the model and returns the
text. `compact` applies the compaction to the conversation itself and reports events through
the sink the strategy was built with.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, Literal, Protocol, Self, runtime_checkable

import anyio
from pydantic import BaseModel, ConfigDict, Field, model_validator

from baton.context.conversation import Conversation
from baton.context.ledger import LEDGER_MAX_TOKENS
from baton.context.payload import Payload, TextBlock, ToolSpec
from baton.context.records import Compaction
from baton.context.truncation import TRUNCATE_KEEP_CHARS, TRUNCATE_OVER_CHARS, TruncationSpec

Summarizer = Callable[[Payload], Awaitable[str]]
"""Sends the compaction payload to the model and returns its text."""

SystemPrompt = str | Sequence[TextBlock] | None

Thinking = Literal["adaptive", "off"] | Annotated[int, Field(ge=1024)]
"""`adaptive` (the model decides how much), `off`, or a manual budget of thinking tokens
(only models before the 4.7 generation take one; docs/models.md)."""
Effort = Literal["low", "medium", "high", "xhigh", "max"]


def check_thinking(thinking: Thinking, max_output_tokens: int) -> None:
    """ValueError when a manual thinking budget leaves no room for the answer."""
    if isinstance(thinking, int) and thinking >= max_output_tokens:
        raise ValueError(
            f"thinking budget ({thinking}) must be below max_output_tokens ({max_output_tokens})"
        )


WindowTokens = Annotated[int, Field(gt=0)]
"""A token count measured against the context window: the window itself, the threshold."""
StepCount = Annotated[int, Field(ge=1)]


class BudgetFields(BaseModel):
    """The budget keys an agent's `[actors.<name>]` table and its `ContextBudget` share, with
    their one check: the threshold inside the window, room to answer after thinking.

    The three sizes have no default here: a configured agent must name them (the pipeline's
    agents get theirs from its defaults); `ContextBudget` gives them defaults.
    """

    context_window: WindowTokens
    compact_threshold: WindowTokens
    keep_recent_steps: StepCount
    max_output_tokens: int = Field(16_000, ge=1)
    summary_role: Literal["assistant", "system"] = "assistant"
    summary_timeout_s: float = Field(120.0, gt=0)
    thinking: Thinking = Field(
        "off", description="adaptive | off | a manual budget of thinking tokens (older models)"
    )
    effort: Effort | None = Field(None, description="low | medium | high | xhigh | max")
    ledger_max_tokens: int = Field(
        LEDGER_MAX_TOKENS, ge=1, description="the most the key-fact ledger may show, in tokens"
    )
    precompact_at: float = Field(
        0.85,
        gt=0,
        le=1,
        description="the share of compact_threshold past which the summary is requested in "
        "the background while the agent works on; 1: only at the threshold, while it waits",
    )

    @model_validator(mode="after")
    def _threshold_inside_window(self) -> Self:
        if self.compact_threshold >= self.context_window:
            raise ValueError(
                f"compact_threshold ({self.compact_threshold}) must be below context_window "
                f"({self.context_window})"
            )
        check_thinking(self.thinking, self.max_output_tokens)
        return self


class ContextBudget(BudgetFields):
    """How much context an agent may use and how it compacts (field names match the config).

    Build it from an actor's config with `ContextBudget.model_validate(agent_config,
    from_attributes=True)`.
    """

    model_config = ConfigDict(frozen=True, extra="ignore", from_attributes=True)

    context_window: WindowTokens = 200_000
    compact_threshold: WindowTokens = 150_000
    keep_recent_steps: StepCount = 3
    summary_max_tokens: int = Field(4000, ge=1)
    compact_margin: float = Field(
        0.1, ge=0, lt=1, description="a compaction must land below threshold x (1 - margin)"
    )
    truncate_over_chars: int = Field(TRUNCATE_OVER_CHARS, ge=1)
    truncate_keep_chars: int = Field(TRUNCATE_KEEP_CHARS, ge=0)

    @property
    def thinking_param(self) -> dict[str, Any] | None:
        """The request's `thinking` field for this setting (None for `off`: send none)."""
        if self.thinking == "adaptive":
            return {"type": "adaptive"}
        if isinstance(self.thinking, int):
            return {"type": "enabled", "budget_tokens": self.thinking}
        return None

    @property
    def output_config(self) -> dict[str, Any] | None:
        """The request's `output_config` field (the effort level), if one is set."""
        return None if self.effort is None else {"effort": self.effort}

    @property
    def summary_request_tokens(self) -> int:
        """`max_tokens` of a compaction request: the summary, plus room to think first."""
        if self.thinking == "off":
            return self.summary_max_tokens
        room = self.thinking if isinstance(self.thinking, int) else self.max_output_tokens
        return self.summary_max_tokens + room

    @property
    def target_tokens(self) -> int:
        """Where a compaction must land: below the threshold by the margin (hysteresis)."""
        return int(self.compact_threshold * (1 - self.compact_margin))

    @property
    def truncation(self) -> TruncationSpec:
        """How long tool results in the kept part are cut."""
        return TruncationSpec(
            self.truncate_over_chars, self.truncate_keep_chars, self.truncate_keep_chars
        )


class Clock(Protocol):
    """Time as compaction sees it; tests pass a manual clock to drive the summary timeout."""

    def now(self) -> float:
        """Seconds on a monotonic scale."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return once `seconds` have passed on this clock."""
        ...


class SystemClock:
    """The real clock: monotonic time and anyio's sleep."""

    def now(self) -> float:
        """Monotonic seconds."""
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """Sleep on the event loop."""
        await anyio.sleep(seconds)


@runtime_checkable
class ContextStrategy(Protocol):
    """How an agent assembles its payloads and compacts its history."""

    name: str
    budget: ContextBudget

    def compose_payload(
        self, system: SystemPrompt, tools: Sequence[ToolSpec], conversation: Conversation
    ) -> Payload:
        """The next request: a valid Messages API payload within the budget (no `model`)."""
        ...

    def should_compact(
        self, conversation: Conversation, budget: ContextBudget | None = None
    ) -> bool:
        """Whether to compact now: over the threshold, and a step arrived since the last one."""
        ...

    def use_prefix(self, system: SystemPrompt, tools: Sequence[ToolSpec]) -> None:
        """The system prompt and tools the requests carry (set before a compaction that no
        request of this process preceded)."""
        ...

    async def compact(self, conversation: Conversation, summarize: Summarizer) -> Compaction:
        """Compact `conversation` in place and return the record to journal."""
        ...

    def on_turn_complete(self, conversation: Conversation) -> None:
        """Bring per-turn state up to date after a step was appended (cheap, no I/O)."""
        ...
