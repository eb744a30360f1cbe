"""The compaction audit: one private JSON file per compaction, saying what it dropped (the
step range and the tools those steps called), the summary that replaced them and the key
facts carried (docs/context.md, "Compaction audit").

Files live at `.baton/compactions/<actor>/<conversation>/<n>.json` (objects at those keys
with a remote store), `n` counting the conversation's compactions from 1; the
`context.compacted` token-log line names the file in its `audit` field, and `baton status`
shows each agent's newest one (read by `last_compaction.py`, from the header this file's
`CompactionAudit` extends).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ConfigDict, Field

from baton.agents._artifact_io import write_atomic
from baton.agents.last_compaction import AuditHeader, DroppedSteps, audit_path
from baton.context.ledger import KeyFact
from baton.context.records import Compaction
from baton.context.steps import Step
from baton.storage.local import remote_store
from baton.storage.protocol import Storage


class CompactionAudit(AuditHeader):
    """One compaction, as its audit file holds it: the header, the summary and the facts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    summary: str | None = Field(description="the summary carried from now on")
    facts: list[KeyFact] = Field(description="the key-fact ledger the summary carries")
    facts_carried: int | None = Field(
        None,
        description="by the server: how many of `facts` its summary lacked, carried beside it",
    )


def dropped_steps(before: Sequence[Step], first_kept_seq: int) -> DroppedSteps | None:
    """What of `before` (the steps held when the compaction started) it did not keep."""
    dropped = [step for step in before if step.seq < first_kept_seq]
    if not dropped:
        return None
    tools = Counter(use.name for step in dropped for use in step.tool_uses)
    return DroppedSteps(
        first_seq=dropped[0].seq,
        last_seq=dropped[-1].seq,
        steps=len(dropped),
        tools=dict(sorted(tools.items())),
    )


def build_audit(
    *,
    actor: str,
    conversation: str,
    number: int,
    record: Compaction,
    before: Sequence[Step],
    facts: Sequence[KeyFact],
) -> CompactionAudit:
    """The audit of `record`, applied to a conversation that held `before`."""
    return CompactionAudit(
        actor=actor,
        conversation=conversation,
        compaction=number,
        ts=datetime.now(UTC).isoformat(timespec="milliseconds"),
        strategy=record.strategy,
        mode=record.mode,
        by=record.by,
        facts_carried=record.facts_carried,
        fallback_reason=record.fallback_reason,
        tokens_before=record.tokens_before,
        tokens_after=record.tokens_after,
        kept_steps=record.kept_steps,
        first_kept_seq=record.first_kept_seq,
        dropped=dropped_steps(before, record.first_kept_seq),
        summary=record.summary,
        facts=list(facts),
    )


async def write_audit(
    workspace: Path, audit: CompactionAudit, storage: Storage | None = None
) -> str:
    """Write `audit` atomically, readable by its user only; its workspace-relative path.

    With a remote store it is the object at that key instead: a worker on another host keeps
    nothing in its own folder (docs/storage.md, "A worker's own directory")."""
    relative = audit_path(audit.actor, audit.conversation, audit.compaction)
    data = json.dumps(audit.model_dump(mode="json"), ensure_ascii=False, indent=2).encode()
    remote = remote_store(storage)
    if remote is not None:
        await remote.write(relative.as_posix(), data)
    else:
        await write_atomic(workspace / relative, data, private=True)
    return relative.as_posix()
