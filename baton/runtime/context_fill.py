"""`ContextFill`: one actor's context size against its window and compaction threshold, as
`status` reports it. Apart from the provider registry (`context_status`), which logs with
structlog, so that the client and `baton status` read it without loading structlog
(docs/architecture.md, "What a command imports")."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ContextFill(BaseModel):
    """One actor's context size against its window and compaction threshold."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    context_tokens: int = Field(ge=0, description="the context size now")
    context_window: int = Field(gt=0, description="the actor's effective context window")
    compact_threshold: int = Field(gt=0, description="context size that triggers compaction")
    fill: float = Field(ge=0, le=1, description="context_tokens / context_window")

    @classmethod
    def of(cls, context_tokens: int, context_window: int, compact_threshold: int) -> ContextFill:
        """Build one, computing `fill` (capped at 1: a context may briefly exceed its window)."""
        return cls(
            context_tokens=context_tokens,
            context_window=context_window,
            compact_threshold=compact_threshold,
            fill=min(1.0, context_tokens / context_window),
        )
