"""`summarize` (the default; docs/context.md, "summarize"): history as first input + last
answer, recent N whole.

Assembly: every round before the recent part shows only its user input and its last
assistant text (all tool results dropped); the last N steps are shown whole, their round's
input carried in front when they begin mid-round. Compaction (past the threshold): the
compact prompt is appended to the same payload, the model's JSON summary is validated
against the agent's schema (or replaced by the extractive fallback), and the conversation
becomes `[compact prompt, summary, recent N steps]`. N never changes between compactions.

`stride` (default 1: exactly the last N steps) moves the history/recent boundary only once
the recent part has grown by `stride` steps, so between moves the payload only grows at
its end and the prompt cache holds; with `stride = N` the recent part keeps N to 2N-1
steps. `bench/token_cost.py` measures what that saves.
"""

from __future__ import annotations

from typing import Any

from baton.context._assembly import Builder, add_entry
from baton.context._strategy_base import StrategyBase, recent_start
from baton.context.caching import Anchor
from baton.context.conversation import Conversation
from baton.context.events import CompactionMode
from baton.context.fallback import fallback_summary
from baton.context.records import Compaction
from baton.context.strategy import Summarizer
from baton.context.summary_format import parse_summary, summary_json
from baton.errors import SummaryFailure, UsageError


class SummarizeStrategy(StrategyBase):
    """The default strategy: history without tool results, recent N steps, LLM summaries."""

    name = "summarize"

    def __init__(self, *args: Any, stride: int = 1, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if stride < 1:
            raise UsageError(f"stride must be at least 1 (got {stride})")
        self.stride = stride
        self._boundary = 0
        self._history = Builder()
        self._history_rounds = 0
        self._fold_cursor = 0

    @property
    def boundary(self) -> int:
        """Index (in `conversation.entries`) of the first step shown whole."""
        return self._boundary

    def _reset(self, conversation: Conversation) -> None:
        self._boundary = 0
        self._history = Builder()
        self._history_rounds = 0
        self._fold_cursor = 0

    def _first_whole(self) -> int:
        return self._boundary

    def _advance(self, conversation: Conversation) -> None:
        entries = conversation.entries
        target = self._start_for(conversation, recent_start(len(entries), self.budget, self.stride))
        if target < self._boundary:
            self._reset(conversation)  # a replayed pin earlier than the live boundary
        self._boundary = max(self._boundary, target)
        if self._boundary >= len(entries):
            return
        first_recent_round = entries[self._boundary].round_index
        rounds = conversation.round_entries
        # Rounds wholly before the boundary join the history, once each, in order.
        while self._history_rounds < first_recent_round:
            r = self._history_rounds
            last_text = None
            while self._fold_cursor < len(entries) and entries[self._fold_cursor].round_index == r:
                entry = entries[self._fold_cursor]
                if entry.last_text is not None:
                    last_text = entry
                self._fold_cursor += 1
            self._history.add(rounds[r].message, rounds[r].tokens)
            if last_text is not None:
                self._history.add(last_text.last_text, last_text.last_text_tokens)
            self._history_rounds += 1

    def _body(self, conversation: Conversation, builder: Builder) -> list[Anchor | None]:
        builder.extend(self._history)
        history_end = builder.end_anchor() if self._history.messages else None
        entries = conversation.entries
        rounds = conversation.round_entries
        i = self._boundary
        first = entries[i].round_index if i < len(entries) else self._history_rounds
        for r in range(first, len(rounds)):
            builder.add(rounds[r].message, rounds[r].tokens)
            while i < len(entries) and entries[i].round_index == r:
                add_entry(builder, conversation, entries[i])
                i += 1
        return [history_end]

    async def compact(self, conversation: Conversation, summarize: Summarizer) -> Compaction:
        """Ask for the summary on the same payload; fall back to extraction if it fails."""
        if not conversation.entries:
            raise UsageError("nothing to compact: the conversation holds no step yet")
        self._sync(conversation)
        started = self.clock.now()
        tokens_before = conversation.context_tokens
        text, reason = await self.call_summarizer(summarize, self.compaction_payload(conversation))
        data: dict[str, Any] | None = None
        if text is not None:
            try:
                data = parse_summary(text, self.summary_schema).model_dump(mode="json")
            except SummaryFailure as exc:
                reason = str(exc)
        mode: CompactionMode = "llm"
        if data is not None:
            conversation.ledger.merge_into(data, max_tokens=self.budget.ledger_max_tokens)
            summary = summary_json(data)
        else:
            fallback = fallback_summary(
                self.summary_schema,
                conversation,
                reason=reason,
                max_tokens=self.budget.ledger_max_tokens,
            )
            summary = summary_json(fallback)
            mode = "fallback"
        lead = self._summary_lead(summary, self.compact_prompt)
        return self.finish_compaction(
            conversation,
            keep=self.budget.keep_recent_steps,
            summary_for=lambda _: (summary, lead),
            prompt=self.compact_prompt,
            mode=mode,
            tokens_before=tokens_before,
            started=started,
            fallback_reason=reason if mode == "fallback" else None,
        )
