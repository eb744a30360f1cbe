"""Journal records of a conversation: every change to it is one of these.

Each mutation of a `Conversation` returns the record describing it; the actor appends that
record to its journal, and `Conversation.replay(records)` rebuilds the same conversation,
compactions included, without calling a model. A `Compaction` is both what `compact`
returns and its journal record: the summary text, which steps stay, which results were cut.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from baton.context.events import CompactedBy, CompactionMode, ContextCompactedEvent
from baton.context.ledger import KeyFact
from baton.context.steps import Step
from baton.context.truncation import TRUNCATE_KEEP_CHARS, TRUNCATE_OVER_CHARS, TruncationSpec
from baton.errors import UsageError


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RoundStarted(_Record):
    """A user input opened round `round`."""

    type: Literal["round"] = "round"
    round: int = Field(ge=0)
    text: str = Field(min_length=1)
    key: str | None = Field(
        None, description="the request that opened the round; the same request never opens two"
    )


class StepAppended(_Record):
    """The model answered and its tools ran: one more step in the current round."""

    type: Literal["step"] = "step"
    step: Step


class FactsRegistered(_Record):
    """Paths or ids joined the key-fact ledger."""

    type: Literal["facts"] = "facts"
    facts: list[KeyFact]


class Compaction(_Record):
    """A compaction: what replaced the older history, and what the log line reports.

    Applying it to the conversation it came from (live or replayed) drops every step before
    `first_kept_seq`, cuts the results listed in `truncated`, and carries `summary` forward
    (None keeps the previous summary, as `sliding_window` does).
    """

    type: Literal["compaction"] = "compaction"
    strategy: str
    mode: CompactionMode
    summary: str | None = Field(None, description="the carried-over summary text (JSON)")
    prompt: str | None = Field(None, description="the compact prompt shown before the summary")
    first_kept_seq: int = Field(ge=0)
    truncated: list[str] = Field(default_factory=list, description="tool_use ids cut")
    truncate_limit: int = Field(TRUNCATE_OVER_CHARS, ge=0)
    truncate_head: int = Field(TRUNCATE_KEEP_CHARS, ge=0)
    truncate_tail: int = Field(TRUNCATE_KEEP_CHARS, ge=0)
    tokens_before: int = Field(ge=0)
    tokens_after: int = Field(ge=0)
    kept_steps: int = Field(ge=0)
    summary_tokens: int = Field(ge=0)
    latency_ms: float = Field(ge=0)
    waited_ms: float | None = Field(
        None,
        ge=0,
        description="how long the agent waited for this compaction (its summary requested in "
        "the background: only the part not yet done at the threshold); None: latency_ms",
    )
    fallback_reason: str | None = Field(None, description="why the LLM summary was not used")
    warning: str | None = Field(None, description="set when fewer than N steps were kept")
    ledger_dropped: int = Field(
        0, ge=0, description="key facts the ledger's token cap left out of the compacted context"
    )
    by: CompactedBy = "baton"
    block: dict[str, Any] | None = Field(
        None,
        description="the server's `compaction` block, verbatim: it stands for the older "
        'history in every later request (docs/context.md, "Server-side context management")',
    )
    server_input_tokens: int | None = Field(None, ge=0)
    server_output_tokens: int | None = Field(None, ge=0)
    facts_carried: int | None = Field(
        None, ge=0, description="key facts the server's summary lacked, shown beside it"
    )

    @property
    def truncation(self) -> TruncationSpec:
        """How the results in `truncated` were cut."""
        return TruncationSpec(self.truncate_limit, self.truncate_head, self.truncate_tail)

    def event(self) -> ContextCompactedEvent:
        """The `context.compacted` log event for this compaction."""
        return ContextCompactedEvent(
            tokens_before=self.tokens_before,
            tokens_after=self.tokens_after,
            kept_steps=self.kept_steps,
            summary_tokens=self.summary_tokens,
            mode=self.mode,
            latency_ms=self.latency_ms,
            waited_ms=self.latency_ms if self.waited_ms is None else self.waited_ms,
            ledger_dropped=self.ledger_dropped,
            by="server" if self.by == "server" else None,
            server_input_tokens=self.server_input_tokens,
            server_output_tokens=self.server_output_tokens,
            facts_carried=self.facts_carried,
        )


ConversationRecord = Annotated[
    RoundStarted | StepAppended | FactsRegistered | Compaction, Field(discriminator="type")
]

RECORD_TYPES = frozenset({"round", "step", "facts", "compaction"})
"""The `type` values of conversation records, for journals that hold other records too."""

_RECORD: TypeAdapter[RoundStarted | StepAppended | FactsRegistered | Compaction] = TypeAdapter(
    ConversationRecord
)


def parse_record(
    data: Mapping[str, Any] | BaseModel,
) -> RoundStarted | StepAppended | FactsRegistered | Compaction:
    """A record from its journal JSON (or the record itself); `UsageError` if it is not one."""
    if isinstance(data, RoundStarted | StepAppended | FactsRegistered | Compaction):
        return data
    if isinstance(data, BaseModel):
        data = data.model_dump()
    try:
        return _RECORD.validate_python(data)
    except ValidationError as exc:
        raise UsageError(
            f"not a conversation record ({data.get('type')!r}): {exc.errors(include_url=False)}"
        ) from None


def dump_record(
    record: RoundStarted | StepAppended | FactsRegistered | Compaction,
) -> dict[str, Any]:
    """The JSON-ready dict to journal."""
    return record.model_dump(mode="json", exclude_none=True)
