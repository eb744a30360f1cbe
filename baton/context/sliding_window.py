"""`sliding_window` (docs/context.md, "sliding_window"): the newest steps that fit, whole.

The budget for history is what is left of `compact_threshold - max_output_tokens` after the
system prompt, the tools, a carried summary and the dynamic context (the current round's
input, always shown). Steps are taken whole, newest first, until the next would not fit;
the oldest shown step's round input is carried in front of it. The step that asked for the
tool results being answered is always shown, even alone over budget.

`refill` (default 1.0: the window is refilled greedily on every turn) below 1 anchors the
window: it only grows at its end until it overflows, then drops to `refill` x the budget,
so the prompt cache holds between slides. An anchored window start only moves forward.

Nothing is summarised. `should_compact` only fires when even the smallest window is over
the threshold; `compact` then forgets every step outside the window and cuts long results.

With no summary to merge it into, the key-fact ledger is shown on its own, in the first user
turn, inside `<key_facts>` tags (capped at `ledger_max_tokens`), so the paths and ids of the
steps that slid out stay in every request (docs/context.md, "Key-fact ledger").
"""

from __future__ import annotations

from typing import Any

from baton.context._assembly import Builder, Lead, add_rounds_from, first_shown_round
from baton.context._strategy_base import LedgerBlockStrategy
from baton.context.caching import Anchor
from baton.context.conversation import Conversation
from baton.context.ledger_view import ledger_message
from baton.context.records import Compaction
from baton.context.strategy import ContextBudget, Summarizer
from baton.errors import UsageError


class SlidingWindowStrategy(LedgerBlockStrategy):
    """Greedy fill from the newest step within the token budget; no summary."""

    name = "sliding_window"

    def __init__(self, *args: Any, refill: float = 1.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not 0 < refill <= 1:
            raise UsageError(f"refill must be in (0, 1] (got {refill})")
        self.refill = refill
        self._start = 0
        self._start_cost = 0
        self._counted_steps = 0
        self._counted_rounds = 0
        self._rendered: tuple[tuple[int, int], Lead] | None = None

    @property
    def window_start(self) -> int:
        """Index (in `conversation.entries`) of the oldest step shown."""
        return self._start

    def _reset(self, conversation: Conversation) -> None:
        self._start = 0
        self._start_cost = 0
        self._counted_steps = 0
        self._counted_rounds = 0
        self._rendered = None

    def _lead(self, conversation: Conversation) -> Lead:
        """The carried summary, if any, then the ledger as a user turn of its own."""
        facts = self._facts_shown(conversation)
        key = (conversation.compactions, facts)
        if self._rendered is None or self._rendered[0] != key:
            lead = super()._lead(conversation)
            message = ledger_message(
                conversation.ledger, facts=facts, max_tokens=self.budget.ledger_max_tokens
            )
            lead.builder.add(message)
            self._rendered = (key, lead)
        return self._rendered[1]

    def _advance(self, conversation: Conversation) -> None:
        rounds = conversation.round_entries
        entries = conversation.entries
        first_round = first_shown_round(conversation, self._start)
        while self._counted_rounds < len(rounds):
            if self._counted_rounds >= first_round:
                self._start_cost += rounds[self._counted_rounds].tokens
            self._counted_rounds += 1
        while self._counted_steps < len(entries):
            self._start_cost += entries[self._counted_steps].whole_tokens
            self._counted_steps += 1

    def _history_budget(self, conversation: Conversation) -> int:
        """Raw tokens available to rounds and steps in the next payload."""
        lead = self._lead(conversation)
        room = self.budget.compact_threshold - self.budget.max_output_tokens
        raw_room = conversation.account.calibration.unapply(room)
        return raw_room - self._prefix.tokens - lead.system_tokens - lead.builder.tokens

    def _fill(self, conversation: Conversation, limit: int) -> tuple[int, int]:
        """Greedy from the newest step: the oldest index that fits in `limit`, and its cost.

        The rounds opened after the last step are always shown, and so is the last step
        when it belongs to the current round (its tool results are what the model answers).
        """
        entries = conversation.entries
        rounds = conversation.round_entries
        last_round = len(rounds) - 1
        if not entries:
            return 0, sum(r.tokens for r in rounds)
        shown_from = min(entries[-1].round_index + 1, last_round + 1)
        cost = sum(rounds[r].tokens for r in range(shown_from, last_round + 1))
        start = len(entries)
        for i in range(len(entries) - 1, -1, -1):
            entry = entries[i]
            add = entry.whole_tokens
            add += sum(rounds[r].tokens for r in range(entry.round_index, shown_from))
            forced = i == len(entries) - 1 and entry.round_index == last_round
            if cost + add > limit and not forced:
                break
            cost += add
            start = i
            shown_from = entry.round_index
        if start == 0:
            # Starting at 0 shows the rounds before the first step as well.
            cost += sum(rounds[r].tokens for r in range(shown_from))
        return start, cost

    def _first_whole(self) -> int:
        return self._start

    def _body(self, conversation: Conversation, builder: Builder) -> list[Anchor | None]:
        budget = self._history_budget(conversation)
        if conversation.pinned_layout is not None:
            # Thinking in the open round: the window stays where its first thinking step saw
            # it, so the blocks go back behind the prefix they were produced after.
            self._start = self._start_for(conversation, self._start)
        elif self.refill >= 1:
            # Greedy on every turn: the window follows the budget both ways (a calibration
            # that lowers the estimates lets older steps back in).
            self._start, self._start_cost = self._fill(conversation, budget)
        elif self._start_cost > budget:
            start, cost = self._fill(conversation, int(budget * self.refill))
            if start > self._start:
                self._start, self._start_cost = start, cost
        add_rounds_from(builder, conversation, self._start)
        return []

    def should_compact(
        self, conversation: Conversation, budget: ContextBudget | None = None
    ) -> bool:
        """Only when the smallest possible window is itself over the threshold."""
        if not super().should_compact(conversation, budget):
            return False
        self._sync(conversation)
        entries = conversation.entries
        _, smallest = self._fill(conversation, 0)
        return smallest > self._history_budget(conversation) and bool(entries)

    async def compact(self, conversation: Conversation, summarize: Summarizer) -> Compaction:
        """Forget the steps outside the window (no model call) and cut long results."""
        if not conversation.entries:
            raise UsageError("nothing to compact: the conversation holds no step yet")
        self._sync(conversation)
        started = self.clock.now()
        tokens_before = conversation.context_tokens
        start, _ = self._fill(conversation, self._history_budget(conversation))
        start = max(start, self._start)
        keep = max(1, len(conversation.entries) - start)
        lead = self._lead(conversation)
        return self.finish_compaction(
            conversation,
            keep=keep,
            summary_for=lambda _: (None, lead),
            prompt=None,
            mode="fallback",
            tokens_before=tokens_before,
            started=started,
            fallback_reason="sliding_window keeps no summary: older steps are dropped",
        )
