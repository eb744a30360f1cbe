"""The `Model` protocol every model client implements, and what a call returns.

An agent actor talks to Claude only through `Model`: `AnthropicModel` (the real SDK) online,
`ScriptedModel` offline and in tests. Around each call the actor binds a `CallContext`
(`with bind_call(...)`), so a client knows which actor, conversation and turn it is answering
without widening `create`'s signature: the scripted model uses it to stay resumable across
restarts, and log lines use it to say whose call they describe.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from baton.context.payload import ContentBlock, Payload, ToolUseBlock
from baton.context.strategy import ContextBudget
from baton.context.usage import Usage
from baton.models.pricing import PRICES, ModelPrice, cost_usd
from baton.models.rules import ModelRules

Purpose = Literal["turn", "compaction", "task_summary"]
Lifecycle = Literal["active", "deprecated", "retired"]

if TYPE_CHECKING:
    # The payload's own block union (not just text | tool_use): lists are invariant, so only
    # this type lets `{"role": "assistant", "content": response.content}` type-check.
    ResponseBlock: TypeAlias = ContentBlock
else:
    # pydantic cannot build a schema from `typing.TypedDict` on Python 3.11, so at run time
    # the field is a plain dict, checked by `_check_blocks` to be a block the API returns.
    ResponseBlock: TypeAlias = dict[str, Any]


class ModelResponse(BaseModel):
    """One model reply: its content blocks, why it stopped, and the call's token usage."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    content: list[ResponseBlock] = Field(
        description="text, tool_use and (kept exactly as received) thinking and "
        "redacted_thinking blocks, shaped like the payload's assistant content"
    )
    stop_reason: str | None = Field(description="end_turn, tool_use, max_tokens, ...")
    usage: Usage
    model: str = Field(description="the model that answered; `offline-scripted` offline")
    latency_ms: float = Field(ge=0, description="wall time of the call, retries included")
    context_management: dict[str, Any] | None = Field(
        None,
        description="what the server's context editing did to this request "
        "(`applied_edits`), when the request asked for any (docs/context.md, "
        '"Server-side context management")',
    )

    @property
    def compaction(self) -> dict[str, Any] | None:
        """The server's `compaction` block, when this reply carries one (it comes first)."""
        for block in self.content:
            if block["type"] == "compaction":
                return dict(block)
        return None

    @field_validator("content", mode="before")
    @classmethod
    def _check_blocks(cls, value: Any) -> list[dict[str, Any]]:
        if not isinstance(value, list):
            raise TypeError("content must be a list of blocks")
        return [_check_block(i, block) for i, block in enumerate(value)]

    @property
    def text(self) -> str:
        """All text blocks joined by newlines (empty when the reply is only tool calls)."""
        return "\n".join(b["text"] for b in self.content if b["type"] == "text")

    @property
    def tool_uses(self) -> list[ToolUseBlock]:
        """The reply's tool_use blocks, in order."""
        return [b for b in self.content if b["type"] == "tool_use"]


def _check_block(index: int, block: Any) -> dict[str, Any]:
    if not isinstance(block, Mapping):
        raise TypeError(f"content.{index} must be an object")
    kind = block.get("type")
    if kind == "text":
        if not isinstance(block.get("text"), str):
            raise TypeError(f"content.{index}.text must be a string")
    elif kind == "tool_use":
        if not all(isinstance(block.get(key), str) for key in ("id", "name")):
            raise TypeError(f"content.{index} needs string `id` and `name`")
        if not isinstance(block.get("input"), Mapping):
            raise TypeError(f"content.{index}.input must be an object")
    elif kind == "thinking":
        if not all(isinstance(block.get(key), str) for key in ("thinking", "signature")):
            raise TypeError(f"content.{index} needs string `thinking` and `signature`")
    elif kind == "redacted_thinking":
        if not isinstance(block.get("data"), str):
            raise TypeError(f"content.{index}.data must be a string")
    elif kind == "compaction":
        # Kept verbatim (signature, encrypted content, tool changes): it goes back unchanged.
        content = block.get("content")
        if content is not None and not isinstance(content, str):
            raise TypeError(f"content.{index}.content must be a string or null")
    else:
        raise TypeError(
            f"content.{index}.type must be text, tool_use, thinking, redacted_thinking or "
            f"compaction, not {kind!r}"
        )
    return dict(block)


class ModelLimits(BaseModel):
    """A model's context window and output cap, where it stands in its lifecycle, and what
    requests it accepts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    context_window: int = Field(gt=0, description="most input tokens one request may carry")
    max_output_tokens: int = Field(gt=0, description="largest allowed `max_tokens`")
    lifecycle: Lifecycle | None = Field(None, description="None when not known (offline)")
    deprecated_at: datetime | None = None
    retires_at: datetime | None = None
    line: str | None = Field(None, description="the model line (opus, sonnet, ...) if known")
    available: bool = Field(
        True, description="False when the Models API does not know the model (HTTP 404)"
    )
    rules: ModelRules | None = Field(
        None, description="the request rules, with the Models API's capabilities when online"
    )
    source: Literal["models_api", "config"] = Field(
        description="`models_api` when looked up online, `config` when the configured values"
    )
    unanswered: str | None = Field(
        None,
        description="why an online lookup fell back to the configured values (`config`), if "
        "it did: the Models API's answer or what reaching it failed with",
    )


class CallContext(BaseModel):
    """Who a model call is for: the actor, its conversation and turn, and why it is made."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    actor: str = Field(min_length=1)
    conversation: str | None = None
    scenario: str | None = None
    turn: int = Field(ge=0, description="the conversation's model-call counter")
    purpose: Purpose = "turn"

    def log_fields(self) -> dict[str, Any]:
        """The fields a log line about this call carries."""
        return {"actor": self.actor, "turn": self.turn, "purpose": self.purpose}

    def headers(self) -> dict[str, str]:
        """HTTP headers naming the call, so proxies and test servers can tell calls apart."""
        fields = {
            "actor": self.actor,
            "conversation": self.conversation,
            "scenario": self.scenario,
            "turn": str(self.turn),
            "purpose": self.purpose,
        }
        return {f"{CALL_HEADER_PREFIX}{k}": v for k, v in fields.items() if v is not None}

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> CallContext | None:
        """The context `headers()` described, or None when the request carries none."""
        lowered = {k.lower(): v for k, v in headers.items()}
        actor = lowered.get(f"{CALL_HEADER_PREFIX}actor")
        if not actor:
            return None
        return cls.model_validate(
            {
                "actor": actor,
                "conversation": lowered.get(f"{CALL_HEADER_PREFIX}conversation"),
                "scenario": lowered.get(f"{CALL_HEADER_PREFIX}scenario"),
                "turn": int(lowered.get(f"{CALL_HEADER_PREFIX}turn", "0")),
                "purpose": lowered.get(f"{CALL_HEADER_PREFIX}purpose", "turn"),
            }
        )


CALL_HEADER_PREFIX = "x-baton-"


_current_call: ContextVar[CallContext | None] = ContextVar("baton_model_call", default=None)


@contextmanager
def bind_call(context: CallContext) -> Iterator[CallContext]:
    """Make `context` the current call for the code inside the block (and tasks it starts)."""
    token = _current_call.set(context)
    try:
        yield context
    finally:
        _current_call.reset(token)


def current_call() -> CallContext | None:
    """The call context bound by the running agent actor, if any."""
    return _current_call.get()


@runtime_checkable
class Model(Protocol):
    """A model client: one request in, one reply out; limits looked up once and cached."""

    @property
    def name(self) -> str:
        """The model's name as it appears in log lines."""
        ...

    async def create(self, payload: Payload) -> ModelResponse:
        """Send one Messages API request; `model` is filled in when the payload has none."""
        ...

    async def limits(self) -> ModelLimits:
        """The model's context window and output cap."""
        ...


@runtime_checkable
class TokenCounter(Protocol):
    """A model client that can count a payload's input tokens without running the model."""

    async def count_tokens(self, payload: Payload) -> int:
        """Input tokens `payload` would use (system, tools and messages)."""
        ...


def model_call_fields(
    response: ModelResponse,
    budget: ContextBudget,
    *,
    turn: int,
    purpose: Purpose,
    prices: Mapping[str, ModelPrice] = PRICES,
) -> dict[str, Any]:
    """The fields of the `model.call` token-log line for `response` (docs/token-log.md);
    `cost_usd` from `prices` (the package's, with baton.toml's `[prices]` merged over)."""
    usage = response.usage
    window = budget.context_window
    return {
        "model": response.model,
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "output_tokens": usage.output_tokens,
        "context_tokens": usage.context_tokens,
        "context_window": window,
        "compact_threshold": budget.compact_threshold,
        "fill": min(1.0, usage.context_tokens / window),
        "latency_ms": response.latency_ms,
        "stop_reason": response.stop_reason,
        "tools": [use["name"] for use in response.tool_uses],
        "turn": turn,
        "purpose": purpose,
        "thinking": str(budget.thinking),
        "effort": budget.effort,
        "cost_usd": cost_usd(response.model, usage, prices=prices),
        **_server_fields(response),
    }


def _server_fields(response: ModelResponse) -> dict[str, Any]:
    """The optional fields of a call that wrote 1-hour cache entries or ran server-side
    context management (docs/token-log.md); absent otherwise, so old lines keep their shape."""
    usage = response.usage
    fields: dict[str, Any] = {}
    if usage.cache_creation_1h_input_tokens:
        fields["cache_creation_1h_input_tokens"] = usage.cache_creation_1h_input_tokens
    compaction = (
        usage.compaction_input_tokens,
        usage.compaction_cache_creation_input_tokens,
        usage.compaction_cache_read_input_tokens,
        usage.compaction_output_tokens,
    )
    if any(compaction):
        # As the call's own counts: uncached, written, read (docs/token-log.md).
        fields["compaction_input_tokens"] = usage.compaction_input_tokens
        fields["compaction_cache_creation_input_tokens"] = compaction[1]
        fields["compaction_cache_read_input_tokens"] = compaction[2]
        fields["compaction_output_tokens"] = usage.compaction_output_tokens
    edits = (response.context_management or {}).get("applied_edits")
    if edits:
        fields["applied_edits"] = edits
    return fields
