"""Two plain assemblies the context strategies are measured against: `PerTurnStrip` (every
step shown, the tool results of all but the newest N replaced by a stub, re-cut every turn)
and `KeepAll` (every step whole until the threshold, then `summarize`'s compaction).

Neither is a strategy an agent is configured with: they are the yardsticks of
`bench/token_cost.py` and the baselines of `baton cost --what-if` (docs/context.md, "What a
run would have cost"). Both compact at the threshold as `summarize` does, so a comparison
shows what the assembly between compactions costs.
"""

from __future__ import annotations

from typing import Any

from baton.context._assembly import Builder, add_rounds_from
from baton.context.caching import Anchor
from baton.context.conversation import Conversation
from baton.context.payload import Message
from baton.context.summarize import SummarizeStrategy
from baton.context.tokens import estimate_message_tokens

STUB = "[tool result stripped from the history]"


class PerTurnStrip(SummarizeStrategy):
    """Every step shown; the tool results of all but the newest N stubbed, re-cut each turn."""

    name = "per-turn-strip"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stubs: dict[int, tuple[Message, int]] = {}

    def _advance(self, conversation: Conversation) -> None:
        return

    def _stubbed(self, seq: int, ids: list[str]) -> tuple[Message, int]:
        if seq not in self._stubs:  # the same objects every turn, as a real assembly keeps
            message: Message = {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": i, "content": STUB} for i in ids
                ],
            }
            self._stubs[seq] = (message, estimate_message_tokens(message))
        return self._stubs[seq]

    def _body(self, conversation: Conversation, builder: Builder) -> list[Anchor | None]:
        entries = conversation.entries
        whole_from = len(entries) - self.budget.keep_recent_steps
        rounds = conversation.round_entries
        stripped_end: Anchor | None = None
        i = 0
        for r in range(len(rounds)):
            builder.add(rounds[r].message, rounds[r].tokens)
            while i < len(entries) and entries[i].round_index == r:
                entry = entries[i]
                builder.add(entry.assistant, entry.assistant_tokens)
                if i < whole_from and entry.results is not None:
                    builder.add(
                        *self._stubbed(entry.step.seq, [u.id for u in entry.step.tool_uses])
                    )
                    stripped_end = builder.end_anchor()
                else:
                    builder.add(entry.results, entry.results_tokens)
                i += 1
        # A breakpoint at the end of the stubbed part, as baton puts one at the end of its
        # history: the next turn finds this turn's stubbed prefix within the 20-block
        # lookback and rewrites only from the newly stubbed step on.
        return [stripped_end]


class KeepAll(SummarizeStrategy):
    """Every step whole until the threshold; then the same summary compaction."""

    name = "keep-all"

    def _advance(self, conversation: Conversation) -> None:
        return

    def _body(self, conversation: Conversation, builder: Builder) -> list[Anchor | None]:
        add_rounds_from(builder, conversation, 0)
        return []
