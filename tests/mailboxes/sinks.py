"""A dead-letter sink that keeps what it is given, for the mailbox tests."""

from __future__ import annotations

from baton.mailboxes import Envelope


class Sink:
    def __init__(self) -> None:
        self.letters: list[tuple[Envelope, str]] = []

    def dead_letter(self, envelope: Envelope, reason: str) -> None:
        self.letters.append((envelope, reason))
