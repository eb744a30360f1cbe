"""The body of `GET /dead-letters` and its lines in `baton dead-letters` (shared by the
control API and the `Client`; no FastAPI here, so the CLI starts without it)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    # The runtime's sink (structlog, the mailboxes): the server's side alone needs it.
    from baton.runtime.dead_letters import DeadLetter

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


class DeadLetterReport(BaseModel):
    """One dead letter: when, whose, what type, why, and what is kept of its body."""

    model_config = ConfigDict(extra="forbid")

    at: str = Field(description="when it was given up on, ISO 8601 UTC")
    actor: str = Field(description="the actor it was addressed to")
    message_type: str = Field(description="the message's class name")
    message_id: str = Field(description="the message's id")
    sender: str | None = Field(description="who sent it, if known")
    attempt: int = Field(description="delivery attempts made")
    reason: str = Field(description="why it was given up on")
    size: int | None = Field(None, description="the body's size in UTF-8 bytes, if kept")
    sha256: str | None = Field(None, description="the SHA-256 of the whole body, if kept")
    whole: bool | None = Field(None, description="whether `excerpt` is the whole body")
    excerpt: str | None = Field(None, description="the start of the body (at most 4096 bytes)")


class DeadLetterList(BaseModel):
    """The newest dead letters, oldest first, and how many there were in all."""

    model_config = ConfigDict(extra="forbid")

    total: int = Field(description="messages dead-lettered since the runtime started")
    kept: int = Field(description="dead letters still kept (the newest, within the bounds)")
    letters: list[DeadLetterReport] = Field(description="the newest `limit` of them, newest last")


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


def report_of(letter: DeadLetter) -> DeadLetterReport:
    """The API's view of one dead letter."""
    envelope = letter.envelope
    body = letter.body
    return DeadLetterReport(
        at=_iso(letter.at),
        actor=letter.actor,
        message_type=letter.message_type or envelope.message_type,
        message_id=envelope.id,
        sender=envelope.sender,
        attempt=envelope.attempt,
        reason=letter.reason,
        size=body.size if body is not None else None,
        sha256=body.sha256 if body is not None else None,
        whole=body.whole if body is not None else None,
        excerpt=body.text if body is not None else None,
    )


def render_dead_letters(listing: DeadLetterList) -> str:
    """`baton dead-letters`: one line per letter, newest last, then the count."""
    lines = []
    for letter in listing.letters:
        at = f"{letter.at[:10]} {letter.at[11:19]}"
        body = ""
        if letter.size is not None and letter.sha256 is not None:
            body = f"  ({letter.size} bytes, sha256 {letter.sha256[:12]})"
        reason = " ".join(letter.reason.split())
        lines.append(f"{at}  {letter.actor}  {letter.message_type}  {reason}{body}")
    shown = len(listing.letters)
    if listing.total == 0:
        lines.append("no dead letters")
    else:
        lines.append(
            f"{shown} shown of {listing.kept} kept ({listing.total} dead-lettered since start)"
        )
    return "\n".join(lines)
