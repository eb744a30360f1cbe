"""What a dead letter keeps of its message's body: a bounded excerpt, the size and a hash.

A refused request can be as big as the control API lets in; kept whole for every dead letter
it would grow the mailbox database (and the runtime's memory) without bound. The excerpt
says what the message was; the size and the SHA-256 identify it against a copy the sender
still has (README.md, "Durable mailboxes and crashes").
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

EXCERPT_BYTES = 4096


@dataclass(frozen=True, slots=True)
class BodyExcerpt:
    """The start of a body (at most `EXCERPT_BYTES` of its UTF-8), its size and its hash."""

    text: str
    size: int
    sha256: str

    @property
    def whole(self) -> bool:
        """Whether `text` is the entire body."""
        return len(_utf8(self.text)) == self.size


def _utf8(text: str) -> bytes:
    # A lone surrogate must not make a dead letter fail: it is counted and hashed as is.
    return text.encode("utf-8", errors="surrogatepass")


def excerpt(body: str, limit: int = EXCERPT_BYTES) -> BodyExcerpt:
    """`body` cut to `limit` UTF-8 bytes (on a character boundary), with its size and hash."""
    data = _utf8(body)
    text = body if len(data) <= limit else data[:limit].decode("utf-8", errors="ignore")
    return BodyExcerpt(text=text, size=len(data), sha256=hashlib.sha256(data).hexdigest())
