"""Assembling messages: the alternation-keeping builder and how rounds and steps join it.

Every piece it adds was rendered and estimated once, when its step arrived; the builder only
sums those estimates (adjusting for merged messages), so a payload's exact estimate costs
nothing extra.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from baton.context.caching import Anchor, last_message_anchor
from baton.context.conversation import Conversation, StepEntry, StepView
from baton.context.payload import Message, TextBlock, ToolSpec
from baton.context.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    estimate_block_tokens,
    estimate_message_tokens,
)


class Builder:
    """Messages in strict user/assistant alternation, with their exact raw token estimate.

    A message of the same role as the previous one is merged into it (blocks appended),
    which is what the API would do anyway; merging saves one message's framing.
    """

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.tokens = 0

    def add(self, message: Message | None, tokens: int | None = None) -> None:
        """Append `message` (estimated here unless `tokens` is given)."""
        if message is None:
            return
        cost = estimate_message_tokens(message) if tokens is None else tokens
        if self._merge(message):
            cost -= MESSAGE_OVERHEAD_TOKENS
        else:
            self.messages.append(message)
        self.tokens += cost

    def extend(self, other: Builder) -> None:
        """Append everything `other` holds."""
        if not other.messages:
            return
        first = other.messages[0]
        if self._merge(first):
            self.tokens -= MESSAGE_OVERHEAD_TOKENS
            self.messages.extend(other.messages[1:])
        else:
            self.messages.extend(other.messages)
        self.tokens += other.tokens

    def _merge(self, message: Message) -> bool:
        if not self.messages or self.messages[-1]["role"] != message["role"]:
            return False
        previous = self.messages[-1]
        self.messages[-1] = {
            "role": previous["role"],
            "content": [*previous["content"], *message["content"]],
        }
        return True

    def end_anchor(self) -> Anchor | None:
        """The last block added so far."""
        return last_message_anchor(self.messages)


def add_entry(
    builder: Builder, conversation: Conversation, entry: StepEntry, view: StepView | None = None
) -> None:
    """A step, whole, as the conversation shows it now (`Conversation.view_of`) or in `view`."""
    for message, tokens in entry.shown(view or conversation.view_of(entry)):
        builder.add(message, tokens)


def first_shown_round(conversation: Conversation, start: int) -> int:
    """The first round shown when entries from `start` on are shown.

    From 0, nothing was dropped: every round shows. Past the last step, the rounds opened
    after it (normally just the current one) still show.
    """
    entries = conversation.entries
    if start == 0:
        return 0
    if start < len(entries):
        return entries[start].round_index
    return min(entries[-1].round_index + 1, len(conversation.rounds) - 1)


def add_rounds_from(builder: Builder, conversation: Conversation, start: int) -> None:
    """Entries from index `start` on, each round's input in front of its first shown step."""
    entries = conversation.entries
    rounds = conversation.round_entries
    i = start
    for r in range(first_shown_round(conversation, start), len(rounds)):
        builder.add(rounds[r].message, rounds[r].tokens)
        while i < len(entries) and entries[i].round_index == r:
            add_entry(builder, conversation, entries[i])
            i += 1


@dataclass
class Prefix:
    """The stable head of every payload: system blocks and tools, estimated once."""

    system_in: Any = None
    tools_in: Any = None
    system: list[TextBlock] = field(default_factory=list)
    tools: list[ToolSpec] = field(default_factory=list)
    tokens: int = 0


@dataclass
class Lead:
    """How the carried summary (or state) shows: extra system blocks and leading messages."""

    system: list[TextBlock] = field(default_factory=list)
    builder: Builder = field(default_factory=Builder)
    anchor: Anchor | None = None

    @property
    def system_tokens(self) -> int:
        """Raw estimate of the extra system blocks."""
        return sum(estimate_block_tokens(b) for b in self.system)
