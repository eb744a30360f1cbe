"""What a replay knows of the run it replays besides the journal: the `model.call` lines of
the token log (when each call was sent, what it was billed) and the summaries the journal
holds (docs/context.md, "What a run would have cost")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from baton.context.payload import Payload, ToolSpec
from baton.context.usage import Usage
from baton.models._offline_summaries import compaction_summary
from baton.models.protocol import Purpose

_USAGE_FIELDS = tuple(Usage.model_fields)


@dataclass(frozen=True)
class LoggedCall:
    """One `model.call` line of the token log, as the replay uses it."""

    actor: str
    conversation: str
    turn: int
    purpose: str
    at: float  # seconds since the epoch
    model: str
    usage: Usage
    context_window: int | None = None
    compact_threshold: int | None = None
    process: str | None = None  # the process that made it (docs/token-log.md, "Fields")

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> LoggedCall:
        """The call a `model.call` record describes; `ValueError` naming what is missing."""
        try:
            at = datetime.fromisoformat(str(record["ts"]).replace("Z", "+00:00")).timestamp()
            counts = {key: int(record.get(key) or 0) for key in _USAGE_FIELDS}
            window, threshold = record.get("context_window"), record.get("compact_threshold")
            process = record.get("process")
            return cls(
                actor=str(record["actor"]),
                conversation=str(record["conversation"]),
                turn=int(record["turn"]),
                purpose=str(record["purpose"]),
                at=at,
                model=str(record["model"]),
                usage=Usage(**counts),
                context_window=window if isinstance(window, int) else None,
                compact_threshold=threshold if isinstance(threshold, int) else None,
                process=process if isinstance(process, str) else None,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"a model.call line without a usable {exc}") from None

    @property
    def summary(self) -> bool:
        """Whether it asked for a compaction's summary."""
        return self.purpose == "compaction"


@dataclass(frozen=True)
class Prefix:
    """What every request of the agent opens with: its system prompt and tools."""

    system: str
    tools: list[ToolSpec]


class JournaledSummaries:
    """The summaries the run's journal holds, to answer the replay's summary calls."""

    def __init__(self, records: Sequence[Mapping[str, Any]], actor: str) -> None:
        self._actor = actor
        self._exact: dict[tuple[int, int], str] = {}
        self._by_number: dict[int, str] = {}
        # The server's blocks, by compaction number and the turn it came with.
        self._blocks: dict[tuple[int, int], tuple[dict[str, Any], int]] = {}
        compactions = steps = 0
        for record in records:
            kind = record.get("type")
            if kind == "summary" and isinstance(record.get("text"), str):
                number, through = record.get("compaction"), record.get("through_seq")
                if isinstance(number, int):
                    self._by_number.setdefault(number, record["text"])
                    if isinstance(through, int):
                        self._exact[(number, through)] = record["text"]
            elif kind == "step":
                steps += 1
            elif kind == "compaction":
                block, output = record.get("block"), record.get("server_output_tokens")
                if record.get("by") == "server" and isinstance(block, dict):
                    self._blocks[(compactions, steps)] = (block, int(output or 0))
                compactions += 1

    def server_block(self, number: int, turn: int) -> tuple[dict[str, Any], int] | None:
        """The server's compaction block (and its output tokens) the run journaled for
        compaction `number` at `turn`, if it compacted there."""
        return self._blocks.get((number, turn))

    def answer(self, number: int, through: int, payload: Payload) -> tuple[str, bool]:
        """The summary text for compaction `number` asked for after step `through`, and
        whether it is the one the run got for that very request."""
        exact = self._exact.get((number, through))
        if exact is not None:
            return exact, True
        if self._by_number:
            nearest = min(self._by_number, key=lambda n: (abs(n - number), n))
            return self._by_number[nearest], False
        return compaction_summary(payload, self._actor), False


class CallTimes:
    """When and by which process the run sent each call, by purpose and turn; the replay's
    clock follows it."""

    def __init__(self, calls: Sequence[LoggedCall]) -> None:
        self._calls: dict[tuple[bool, int], LoggedCall] = {}
        for call in calls:
            self._calls.setdefault((call.summary, call.turn), call)
        self.now = min((call.at for call in calls), default=0.0)
        self._process: str | None = None

    def advance(self, purpose: Purpose, turn: int) -> bool:
        """Move the clock to the call's time (a policy's own summary call: to its turn's),
        never back; whether another process made it than the call before (the run was
        restarted in between)."""
        summary = purpose == "compaction"
        call = self._calls.get((summary, turn)) or self._calls.get((False, turn))
        if call is None:
            return False
        self.now = max(self.now, call.at)
        restarted = None not in (self._process, call.process) and self._process != call.process
        self._process = call.process or self._process
        return restarted

    def logged(self, purpose: Purpose, turn: int) -> LoggedCall | None:
        """The run's own call of that purpose and turn, if the log has it."""
        return self._calls.get((purpose == "compaction", turn))
