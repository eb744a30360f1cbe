"""The compaction audit: one private JSON file per compaction, saying what it dropped (the
step range and the tools those steps called), the summary that replaced them and the key
facts carried (docs/context.md, "Compaction audit").

Files live at `.baton/compactions/<actor>/<conversation>/<n>.json`, `n` counting the
conversation's compactions from 1; the `context.compacted` token-log line names the file in
its `audit` field, and `baton status` shows each agent's newest one.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from baton._private import STATE_DIR
from baton.agents._artifact_io import write_atomic
from baton.context.ledger import KeyFact
from baton.context.records import Compaction
from baton.context.steps import Step

AUDIT_DIR = Path(STATE_DIR) / "compactions"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


class DroppedSteps(BaseModel):
    """The steps a compaction took out of the request: their range and the tools they called."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    first_seq: int = Field(ge=0)
    last_seq: int = Field(ge=0)
    steps: int = Field(ge=1)
    tools: dict[str, int] = Field(description="tool name -> calls among the dropped steps")


class CompactionAudit(BaseModel):
    """One compaction, as its audit file holds it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    actor: str
    conversation: str
    compaction: int = Field(ge=1, description="the conversation's compaction number, from 1")
    ts: str = Field(description="when the compaction was applied, ISO 8601 UTC")
    strategy: str
    mode: str = Field(description="llm | fallback")
    fallback_reason: str | None = None
    tokens_before: int = Field(ge=0)
    tokens_after: int = Field(ge=0)
    kept_steps: int = Field(ge=0)
    first_kept_seq: int = Field(ge=0)
    dropped: DroppedSteps | None = Field(description="None when no step was dropped")
    summary: str | None = Field(description="the summary carried from now on")
    facts: list[KeyFact] = Field(description="the key-fact ledger the summary carries")

    @property
    def freed(self) -> int:
        """Tokens the compaction took off the context."""
        return max(0, self.tokens_before - self.tokens_after)


def audit_path(actor: str, conversation: str, number: int) -> Path:
    """Workspace-relative path of a compaction's audit file (names made filesystem-safe)."""
    return AUDIT_DIR / _UNSAFE.sub("_", actor) / _UNSAFE.sub("_", conversation) / f"{number}.json"


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
        fallback_reason=record.fallback_reason,
        tokens_before=record.tokens_before,
        tokens_after=record.tokens_after,
        kept_steps=record.kept_steps,
        first_kept_seq=record.first_kept_seq,
        dropped=dropped_steps(before, record.first_kept_seq),
        summary=record.summary,
        facts=list(facts),
    )


async def write_audit(workspace: Path, audit: CompactionAudit) -> str:
    """Write `audit` atomically, readable by its user only; its workspace-relative path."""
    relative = audit_path(audit.actor, audit.conversation, audit.compaction)
    data = json.dumps(audit.model_dump(mode="json"), ensure_ascii=False, indent=2)
    await write_atomic(workspace / relative, data.encode(), private=True)
    return relative.as_posix()


def last_compactions(workspace: Path) -> dict[str, CompactionAudit]:
    """Each agent's newest compaction in the workspace (unreadable files are skipped)."""
    newest: dict[str, CompactionAudit] = {}
    root = workspace / AUDIT_DIR
    if not root.is_dir():
        return newest
    for path in root.glob("*/*/*.json"):
        try:
            audit = CompactionAudit.model_validate_json(path.read_bytes())
        except (OSError, ValidationError):
            continue
        held = newest.get(audit.actor)
        if held is None or (audit.ts, audit.compaction) > (held.ts, held.compaction):
            newest[audit.actor] = audit
    return dict(sorted(newest.items()))


def compaction_lines(workspace: Path) -> list[str]:
    """`baton status`'s lines: each agent's newest compaction and its audit file."""
    lines = []
    for actor, audit in last_compactions(workspace).items():
        dropped = audit.dropped
        what = (
            f"dropped steps {dropped.first_seq}-{dropped.last_seq}"
            if dropped is not None
            else "dropped no step"
        )
        lines.append(
            f"  {actor}: last compaction #{audit.compaction} of {audit.conversation} at "
            f"{audit.ts} ({audit.mode}): {audit.tokens_before:,} -> {audit.tokens_after:,} "
            f"tokens, {what}; {audit_path(actor, audit.conversation, audit.compaction)}"
        )
    return lines
