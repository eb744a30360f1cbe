"""The agents' token-log records: model calls, compactions, truncated tool results and
handoffs (docs/token-log.md, "Fields"), registered with the token log on import."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from baton.runtime.token_records import TokenLogRecord, register_records


class ModelCall(TokenLogRecord):
    event: Literal["model.call"] = "model.call"
    omitted_when_none: ClassVar[frozenset[str]] = frozenset(
        {
            "cache_creation_1h_input_tokens",
            "compaction_input_tokens",
            "compaction_cache_creation_input_tokens",
            "compaction_cache_read_input_tokens",
            "compaction_output_tokens",
            "applied_edits",
        }
    )
    model: str = Field(
        description="model name; `offline-scripted` for the offline model, `offline-replay` "
        "for a replayed recording (docs/recordings.md)"
    )
    input_tokens: int = Field(ge=0, description="uncached input tokens")
    cache_creation_input_tokens: int = Field(ge=0, description="input tokens written to the cache")
    cache_read_input_tokens: int = Field(ge=0, description="input tokens read from the cache")
    output_tokens: int = Field(ge=0, description="tokens generated")
    context_tokens: int = Field(ge=0, description="context size after the call (all four summed)")
    context_window: int = Field(gt=0, description="the actor's effective context window")
    compact_threshold: int = Field(gt=0, description="context size that triggers compaction")
    fill: float = Field(ge=0, le=1, description="context_tokens / context_window")
    latency_ms: float = Field(ge=0, description="wall time of the call")
    stop_reason: str | None = Field(description="why the model stopped (end_turn, tool_use, ...)")
    tools: list[str] = Field(
        default_factory=list, description="the tools the reply called, in order (names only)"
    )
    turn: int = Field(ge=0, description="the actor's model-call counter in this conversation")
    purpose: str = Field("turn", description="turn | compaction | task_summary")
    thinking: str = Field(
        "off", description="the actor's thinking setting: adaptive | off | a token budget"
    )
    effort: str | None = Field(None, description="the effort level sent, if any")
    cost_usd: float | None = Field(
        None,
        ge=0,
        description="estimated USD of the call from list prices and `[prices]` (docs/models.md, "
        '"Prices"); null when a price it needs is unknown',
    )
    cache_creation_1h_input_tokens: int | None = Field(
        None,
        ge=0,
        description="of cache_creation_input_tokens, those written to live an hour (absent: "
        'none; docs/context.md, "Prompt-cache breakpoints")',
    )
    compaction_input_tokens: int | None = Field(
        None,
        ge=0,
        description="uncached input tokens of the server-side compaction the call ran, billed "
        'on top (absent: none ran; docs/context.md, "Server-side context management")',
    )
    compaction_cache_creation_input_tokens: int | None = Field(
        None, ge=0, description="input tokens that compaction wrote to the cache"
    )
    compaction_cache_read_input_tokens: int | None = Field(
        None, ge=0, description="input tokens that compaction read from the cache"
    )
    compaction_output_tokens: int | None = Field(
        None, ge=0, description="output tokens of that compaction (its summary)"
    )
    applied_edits: list[dict[str, Any]] | None = Field(
        None,
        description="the server's context edits applied to the request, as it reported them "
        "(`context_management.applied_edits`; absent: none)",
    )


class ContextCompacted(TokenLogRecord):
    event: Literal["context.compacted"] = "context.compacted"
    omitted_when_none: ClassVar[frozenset[str]] = frozenset(
        {"by", "server_input_tokens", "server_output_tokens", "facts_carried"}
    )
    tokens_before: int = Field(ge=0)
    tokens_after: int = Field(ge=0)
    kept_steps: int = Field(ge=0, description="recent steps kept whole")
    summary_tokens: int = Field(ge=0)
    mode: Literal["llm", "fallback"] = Field(description="llm summary, or the extractive fallback")
    by: Literal["server"] | None = Field(
        None,
        description='`server` when the Messages API wrote the summary (`strategy = "server"`); '
        "absent: baton's own summary call",
    )
    server_input_tokens: int | None = Field(
        None, ge=0, description="by server: the input tokens its compaction billed"
    )
    server_output_tokens: int | None = Field(
        None, ge=0, description="by server: the output tokens (the summary) it billed"
    )
    facts_carried: int | None = Field(
        None,
        ge=0,
        description="by server: key facts its summary lacked, carried beside it in a "
        "`<key_facts>` note",
    )
    latency_ms: float = Field(ge=0, description="from the summary request to the compaction")
    waited_ms: float = Field(
        0.0,
        ge=0,
        description="how long the agent waited for it: latency_ms when the summary was asked "
        "for at the threshold, less when it was asked for in the background (precompact_at)",
    )
    ledger_dropped: int = Field(
        0, ge=0, description="key facts the ledger's token cap left out (0: every fact kept)"
    )
    audit: str | None = Field(
        None,
        description="workspace-relative path of the compaction's audit file "
        "(`.baton/compactions/<actor>/<conversation>/<n>.json`; docs/context.md)",
    )


class ContextCompactionIneffective(TokenLogRecord):
    event: Literal["context.compaction_ineffective"] = "context.compaction_ineffective"
    freed_tokens: list[int] = Field(
        description="what each of the compactions in a row that freed too little took off"
    )
    min_gain_tokens: int = Field(
        ge=0, description="the least a compaction must free: min_compaction_gain x threshold"
    )
    compact_threshold: int = Field(gt=0, description="context size that triggers compaction")
    context_tokens: int = Field(ge=0, description="context size after the last compaction")
    context_window: int = Field(gt=0, description="the actor's effective context window")


class ToolResultTruncated(TokenLogRecord):
    event: Literal["context.tool_result_truncated"] = "context.tool_result_truncated"
    tool_use_id: str
    original_chars: int = Field(ge=0)
    kept_chars: int = Field(ge=0)


class _Handoff(TokenLogRecord):
    handoff_type: str = Field(description="init_to_execute | execute_to_init | scenario_complete")
    from_: str = Field(alias="from", description="the sending actor")
    to: str = Field(description="the receiving actor")
    package_tokens: int = Field(ge=0, description="estimated tokens of the package itself")


class HandoffSent(_Handoff):
    event: Literal["handoff.sent"] = "handoff.sent"


class HandoffReceived(_Handoff):
    event: Literal["handoff.received"] = "handoff.received"


register_records(
    ModelCall,
    ContextCompacted,
    ContextCompactionIneffective,
    ToolResultTruncated,
    HandoffSent,
    HandoffReceived,
)
