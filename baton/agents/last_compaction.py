"""Each agent's last compaction, as `baton status` shows it: read from the compaction audit
files (docs/context.md, "Compaction audit") with pydantic alone, so that the command loads
no context code (docs/architecture.md, "What a command imports").

An audit file holds an `AuditHeader` and, after it, the summary and the key facts: the
writer's `CompactionAudit` (`compaction_audit.py`) extends the header with them.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from baton._private import STATE_DIR

AUDIT_DIR = Path(STATE_DIR) / "compactions"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def audit_path(actor: str, conversation: str, number: int) -> Path:
    """Workspace-relative path of a compaction's audit file (names made filesystem-safe)."""
    return AUDIT_DIR / _UNSAFE.sub("_", actor) / _UNSAFE.sub("_", conversation) / f"{number}.json"


class DroppedSteps(BaseModel):
    """The steps a compaction took out of the request: their range and the tools they called."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    first_seq: int = Field(ge=0)
    last_seq: int = Field(ge=0)
    steps: int = Field(ge=1)
    tools: dict[str, int] = Field(description="tool name -> calls among the dropped steps")


class AuditHeader(BaseModel):
    """One compaction as its audit file starts: which one, how the summary was made, what it
    freed, kept and dropped. Read alone, the rest of the file is skipped."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    actor: str
    conversation: str
    compaction: int = Field(ge=1, description="the conversation's compaction number, from 1")
    ts: str = Field(description="when the compaction was applied, ISO 8601 UTC")
    strategy: str
    mode: str = Field(description="llm | fallback")
    by: str = Field("baton", description="who wrote the summary: baton, or the server")
    fallback_reason: str | None = None
    tokens_before: int = Field(ge=0)
    tokens_after: int = Field(ge=0)
    kept_steps: int = Field(ge=0)
    first_kept_seq: int = Field(ge=0)
    dropped: DroppedSteps | None = Field(description="None when no step was dropped")

    @property
    def freed(self) -> int:
        """Tokens the compaction took off the context."""
        return max(0, self.tokens_before - self.tokens_after)


def last_compactions(workspace: Path) -> dict[str, AuditHeader]:
    """Each agent's newest compaction in the workspace (unreadable files are skipped)."""
    newest: dict[str, AuditHeader] = {}
    root = workspace / AUDIT_DIR
    if not root.is_dir():
        return newest
    for path in root.glob("*/*/*.json"):
        try:
            audit = AuditHeader.model_validate_json(path.read_bytes())
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
