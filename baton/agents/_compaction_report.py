"""What an agent does once a compaction is applied: write its audit file, log the
`context.compacted` line naming it, and watch for compactions that free too little
(docs/context.md, "Compaction audit" and "Ineffective compactions").

Two compactions in a row that each free less than `min_compaction_gain` x the threshold
stop the conversation compacting (a `context.compaction_ineffective` line gives the
figures): a third would cost a summary call and free as little. From then on the round goes
on uncompacted, and fails with `CompactionIneffectiveError` once the context is about to
overflow the window. A resumed agent counts again from its journal's compaction records, so
it stops where the uninterrupted one would have.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from baton.agents.agent_config import TokenSink
from baton.agents.compaction_audit import build_audit, write_audit
from baton.context.conversation import Conversation
from baton.context.events import ContextCompactedEvent
from baton.context.records import Compaction
from baton.context.steps import Step
from baton.context.strategy import ContextBudget
from baton.storage.protocol import Storage

WEAK_IN_A_ROW = 2


class AuditedCompaction(ContextCompactedEvent):
    """`context.compacted` as an agent logs it: with the audit file it wrote, if any."""

    audit: str | None = Field(None, description="workspace-relative path of the audit file")


@dataclass
class _Guard:
    weak: list[int] = field(default_factory=list)  # freed tokens of the weak ones in a row
    stopped: bool = False


class CompactionReports:
    """One agent's compaction aftercare, per conversation."""

    def __init__(
        self,
        *,
        actor: Callable[[], str],
        workspace: Path | None,
        token_log: TokenSink,
        min_gain: float,
        storage: Storage | None = None,
    ) -> None:
        self._actor = actor
        self._workspace = workspace
        self._storage = storage  # a remote store takes the audits instead of the workspace
        self._token_log = token_log
        self._min_gain = min_gain
        self._guards: dict[str, _Guard] = {}
        # Per task, not per agent: an agent compacts several conversations at once, each in
        # its own task, and each line must carry its own conversation's figures.
        self._held: ContextVar[ContextCompactedEvent | None] = ContextVar(
            "held_compaction", default=None
        )

    def hold(self, event: ContextCompactedEvent) -> None:
        """Keep the strategy's `context.compacted` event until its audit file is written."""
        self._held.set(event)

    def compacting(self, conversation: Conversation) -> bool:
        """False once compacting stopped helping (no summary is worth asking for)."""
        guard = self._guards.get(conversation.id)
        return guard is None or not guard.stopped

    def stopped(self, conversation: Conversation) -> list[int] | None:
        """The tokens freed by the weak compactions in a row that stopped the conversation
        compacting, or None while it compacts (`baton.agents.compaction` decides)."""
        guard = self._guards.get(conversation.id)
        return list(guard.weak) if guard is not None and guard.stopped else None

    async def compacted(
        self,
        conversation: Conversation,
        record: Compaction,
        before: Sequence[Step],
        budget: ContextBudget,
    ) -> AuditedCompaction:
        """Write the audit, log the held `context.compacted` line (naming the audit file),
        count a weak compaction; the event as logged."""
        actor = self._actor()
        audit = None
        if self._workspace is not None:
            audit = await write_audit(
                self._workspace,
                build_audit(
                    actor=actor,
                    conversation=conversation.id,
                    number=conversation.compactions,
                    record=record,
                    before=before,
                    facts=list(conversation.ledger),
                ),
                self._storage,
            )
        held = self._held.get() or record.event()
        self._held.set(None)
        event = AuditedCompaction(**held.log_fields(), audit=audit)
        fields = event.log_fields()  # no workspace, no file: the line says nothing of one
        self._token_log.emit(event.event, **fields)
        self._count(conversation, record, budget)
        return event

    def floor(self, budget: ContextBudget) -> int:
        """The fewest tokens a compaction must free not to count as weak."""
        return int(self._min_gain * budget.compact_threshold)

    def restore(
        self, conversation: str, compactions: Iterable[Mapping[str, Any]], budget: ContextBudget
    ) -> None:
        """Count a conversation's journaled compaction records again, in order, as they were
        counted live (their `context.compaction_ineffective` line is not logged twice)."""
        guard = self._guards[conversation] = _Guard()
        for record in compactions:
            freed = int(record.get("tokens_before", 0)) - int(record.get("tokens_after", 0))
            self._weak(guard, freed, budget)

    def forget(self, conversation: str) -> None:
        """Drop a conversation's count (it left memory; `restore` counts it again)."""
        self._guards.pop(conversation, None)

    def _weak(self, guard: _Guard, freed: int, budget: ContextBudget) -> bool:
        """Count one compaction that freed `freed` tokens; True when it stops compacting."""
        freed = max(0, freed)
        if freed >= self.floor(budget):
            guard.weak.clear()
            return False
        guard.weak.append(freed)
        if len(guard.weak) < WEAK_IN_A_ROW or guard.stopped:
            return False
        guard.stopped = True
        return True

    def _count(self, conversation: Conversation, record: Compaction, budget: ContextBudget) -> None:
        guard = self._guards.setdefault(conversation.id, _Guard())
        if not self._weak(guard, record.tokens_before - record.tokens_after, budget):
            return
        self._token_log.emit(
            "context.compaction_ineffective",
            freed_tokens=list(guard.weak),
            min_gain_tokens=self.floor(budget),
            compact_threshold=budget.compact_threshold,
            context_tokens=conversation.context_tokens,
            context_window=budget.context_window,
        )
