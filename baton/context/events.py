"""Events the context engine reports, with the token log's fields (docs/token-log.md,
"Events"), through a callback.

The strategy calls the `EventSink` it was given; the actor wires it to the token log
(`token_log.emit(event.event, **event.log_fields())`), which adds `ts`, `actor`, `scenario`
and `conversation`. `context.warning` is not a token-log event: route it to the actor's
structlog logger at warning level.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

CompactionMode = Literal["llm", "fallback"]
CompactedBy = Literal["baton", "server"]
"""Who wrote a compaction's summary: baton's own summary call, or the Messages API's
server-side compaction (docs/context.md, "Server-side context management")."""


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def log_fields(self) -> dict[str, Any]:
        """The fields of the log line, without `event` (passed separately)."""
        return self.model_dump(exclude={"event"})


class ContextCompactedEvent(_Event):
    """A compaction finished (`context.compacted`)."""

    event: Literal["context.compacted"] = "context.compacted"
    tokens_before: int = Field(ge=0)
    tokens_after: int = Field(ge=0)
    kept_steps: int = Field(ge=0)
    summary_tokens: int = Field(ge=0)
    mode: CompactionMode
    latency_ms: float = Field(ge=0)
    waited_ms: float = Field(0.0, ge=0)
    ledger_dropped: int = Field(0, ge=0)
    by: CompactedBy | None = Field(None, description="`server` on a server-side compaction")
    server_input_tokens: int | None = Field(
        None, ge=0, description="what the server's compaction read, as it billed it"
    )
    server_output_tokens: int | None = Field(
        None, ge=0, description="what the server's compaction wrote, as it billed it"
    )
    facts_carried: int | None = Field(
        None,
        ge=0,
        description="key facts the server's summary left out, carried beside it",
    )

    def log_fields(self) -> dict[str, Any]:
        """The fields of the log line; the server's figures only on a server compaction."""
        return self.model_dump(exclude={"event"}, exclude_none=True)


class ToolResultTruncatedEvent(_Event):
    """A tool result in the kept part was cut to head + tail."""

    event: Literal["context.tool_result_truncated"] = "context.tool_result_truncated"
    tool_use_id: str
    original_chars: int = Field(ge=0)
    kept_chars: int = Field(ge=0)


class ContextWarningEvent(_Event):
    """A compaction could not keep the configured recent steps, or still ends over target."""

    event: Literal["context.warning"] = "context.warning"
    reason: str
    kept_steps: int = Field(ge=0)
    keep_recent_steps: int = Field(ge=0)
    tokens_after: int = Field(ge=0)
    target_tokens: int = Field(ge=0)


ContextEvent = Annotated[
    ContextCompactedEvent | ToolResultTruncatedEvent | ContextWarningEvent,
    Field(discriminator="event"),
]

EventSink = Callable[[ContextCompactedEvent | ToolResultTruncatedEvent | ContextWarningEvent], None]
"""Receives every event a strategy reports; must not block (it runs inside compaction)."""

TOKEN_LOG_EVENTS = frozenset({"context.compacted", "context.tool_result_truncated"})
"""The events that belong in the token log; the rest are warnings for the actor's logger."""


def ignore_events(
    _: ContextCompactedEvent | ToolResultTruncatedEvent | ContextWarningEvent,
) -> None:
    """The default sink: drop the event."""
