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
steps. `strip_batch_tokens` moves it sooner, once the steps past the last N hold more than
that many tokens, so a few huge tool results do not wait for a whole stride. Either way the
boundary is a pure function of the steps, so a replay lays out as the live run did, and the
summary request keeps the layout of the request before it, so it reads that request's
prefix from the cache (docs/context.md, "summarize").
`bench/token_cost.py` measures what that saves.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from baton.context._assembly import Builder, add_entry
from baton.context._strategy_base import StrategyBase, recent_start
from baton.context.caching import Anchor
from baton.context.conversation import Conversation, StepEntry
from baton.context.edit_requests import CLEAR_SHARE_OF_THRESHOLD, clear_tool_uses_edit, with_edits
from baton.context.errors import SummaryFailure
from baton.context.events import CompactionMode, ContextWarningEvent
from baton.context.fallback import fallback_summary
from baton.context.ledger_view import ledger_message
from baton.context.payload import Message, Payload, ToolSpec
from baton.context.records import Compaction
from baton.context.steps import StepLayout
from baton.context.strategy import Summarizer, SystemPrompt
from baton.context.summary_format import parse_summary, summary_json
from baton.errors import UsageError


@dataclass(frozen=True)
class ReadySummary:
    """A summary requested before the compaction that uses it: in the background past
    `precompact_at`, or journaled before a crash. `text` None: the request failed or timed
    out (`reason`), and the extractive fallback replaces it."""

    text: str | None
    through_seq: int  # the last step the request showed
    started: float = 0.0  # when it was requested, on the strategy's clock
    waited_ms: float = 0.0  # how long the agent waited for it at the threshold
    reason: str = ""


BATCH_SHARE_OF_THRESHOLD = 4
"""`strip_batch_tokens` is capped at the compaction threshold divided by this."""


class SummarizeStrategy(StrategyBase):
    """The default strategy: history without tool results, recent N steps, LLM summaries."""

    name = "summarize"

    def __init__(
        self,
        *args: Any,
        stride: int = 1,
        strip_batch_tokens: int | None = None,
        tool_result_clearing: Literal["client", "server"] = "client",
        fold_rounds: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.fold_rounds = fold_rounds
        if tool_result_clearing not in ("client", "server"):
            raise UsageError(
                f"tool_result_clearing must be client or server (got {tool_result_clearing!r})"
            )
        self.tool_result_clearing = tool_result_clearing
        if stride < 1:
            raise UsageError(f"stride must be at least 1 (got {stride})")
        if strip_batch_tokens is not None and strip_batch_tokens < 1:
            raise UsageError(f"strip_batch_tokens must be at least 1 (got {strip_batch_tokens})")
        self.stride = stride
        self.strip_batch_tokens = strip_batch_tokens
        self._starts: list[int] = []  # the natural boundary once 1, 2, ... steps are held
        self._reuse: StepLayout | None = None  # the layout a summary request keeps
        self._boundary = 0
        self._history = Builder()
        self._history_rounds = 0
        self._fold_cursor = 0
        self._note: tuple[tuple[int, int], Message | None] | None = None

    @property
    def boundary(self) -> int:
        """Index (in `conversation.entries`) of the first step shown whole."""
        return self._boundary

    def _reset(self, conversation: Conversation) -> None:
        self._starts = []
        self._boundary = 0
        self._history = Builder()
        self._history_rounds = 0
        self._fold_cursor = 0
        self._note = None

    def _first_whole(self) -> int:
        return self._boundary

    def _natural_start(self, conversation: Conversation) -> int:
        """Where the whole part starts by the strategy's own rule (no pin): never before the
        open round's first step (`_round_floor`), and past it by the batch rule.

        With `strip_batch_tokens` the boundary depends on where it was, so it is worked out
        step by step from the first, once each: the same for a live run and a replay."""
        entries = conversation.entries
        floor = self._round_floor(conversation)
        if self.tool_result_clearing == "server":
            return floor
        batch = self._batch_tokens()
        if batch is None:
            return max(floor, recent_start(len(entries), self.budget, self.stride))
        starts = self._starts
        while len(starts) < len(entries):
            held = len(starts) + 1
            start = max(starts[-1] if starts else 0, self._floor_of(entries, held))
            starts.append(self._moved(entries, start, held - self.budget.keep_recent_steps, batch))
        return max(floor, starts[len(entries) - 1] if entries else 0)

    def _batch_tokens(self) -> int | None:
        """`strip_batch_tokens`, capped: results waiting for their batch may hold at most a
        quarter of the threshold, so a small budget strips sooner rather than compacting
        (docs/context.md, "summarize": stripping in batches)."""
        batch = self.strip_batch_tokens
        if batch is None:
            return None
        return min(batch, max(1, self.budget.compact_threshold // BATCH_SHARE_OF_THRESHOLD))

    def _moved(self, entries: Sequence[StepEntry], start: int, over_end: int, batch: int) -> int:
        """The boundary after `start` once the steps before `over_end` have aged out of the
        newest N: moved there when they number `stride` or hold more than `batch` tokens."""
        if over_end > start and (
            over_end - start >= self.stride
            or sum(e.whole_tokens for e in entries[start:over_end]) > batch
        ):
            return over_end
        return start

    @property
    def _folds(self) -> bool:
        """Whether a new round starts with the earlier rounds folded (`_round_floor`)."""
        return self.fold_rounds and self.tool_result_clearing != "server"

    def _round_floor(self, conversation: Conversation) -> int:
        """With `fold_rounds`, the first step of the open round (every step held, when it
        has none yet): a new round starts with the earlier rounds folded (docs/context.md,
        "summarize"). A round opens after a wait (the Scheduler's other work, an approval)
        that often outlives the prompt cache, so what it re-sends is written again anyway:
        the earlier rounds' tool results are left out then rather than paid for on every
        later request; their first input and last answer stay, and the ledger keeps their
        paths and ids. 0 without it, or while the server clears the results
        (`tool_result_clearing = "server"`)."""
        entries = conversation.entries
        if self._folds and _round_opened_since(conversation):
            return len(entries)
        return self._floor_of(entries, len(entries))

    def _floor_of(self, entries: Sequence[StepEntry], held: int) -> int:
        """The first step of the round of the `held`-th step (a function of the steps alone,
        so the boundaries worked out step by step stay the same once a round opens)."""
        if not self._folds or held == 0:
            return 0
        newest = entries[held - 1].round_index
        return bisect_left(entries, newest, lo=0, hi=held, key=lambda e: e.round_index)

    def _natural_after(self, conversation: Conversation, ahead: int) -> int:
        """`_natural_start` once `ahead` more steps are held, from the steps held now (the
        batch the newest steps make as they age out of the last N; they join the open
        round, so its floor stays)."""
        entries = conversation.entries
        start = self._natural_start(conversation)
        if self.tool_result_clearing == "server":
            return start
        batch = self._batch_tokens()
        floor = self._round_floor(conversation)
        for count in range(len(entries) + 1, len(entries) + ahead + 1):
            if batch is None:
                start = max(floor, recent_start(count, self.budget, self.stride))
                continue
            over_end = min(count - self.budget.keep_recent_steps, len(entries))
            start = self._moved(entries, start, over_end, batch)
        return start

    def _advance(self, conversation: Conversation) -> None:
        entries = conversation.entries
        natural = self._natural_start(conversation)
        if self._reuse is not None:
            # The summary request shows the history as the request before it did, so only
            # the compact prompt after that request's breakpoint is new (docs/context.md,
            # "Compaction").
            natural = min(
                natural,
                bisect_left(entries, self._reuse.first_whole, key=lambda e: e.step.seq),
            )
        target = self._start_for(conversation, natural)
        if target < self._boundary:
            self._reset(conversation)  # a replayed pin earlier than the live boundary
        self._boundary = max(self._boundary, target)
        rounds = conversation.round_entries
        if self._boundary < len(entries):
            first_recent_round = entries[self._boundary].round_index
        elif _round_opened_since(conversation):
            # Past every step: a round opened since, and the earlier ones are all history.
            first_recent_round = len(rounds) - 1
        else:
            return
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
        builder.add(self._facts_note(conversation))
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

    def _facts_note(self, conversation: Conversation) -> Message | None:
        """The key facts no longer shown where they came from and not yet in the summary:
        registered since the last compaction merged the ledger, before the first step shown
        whole. It changes only when the boundary moves or a compaction happens, and sits
        after the history's breakpoint, so between batches the prompt cache holds
        (docs/context.md, "Key-fact ledger")."""
        entries = conversation.entries
        i = self._boundary
        first_whole = entries[i].step.seq if i < len(entries) else conversation.next_seq
        span = (conversation.facts_summarized, conversation.facts_before(first_whole))
        if span[1] <= span[0]:
            return None
        if self._note is None or self._note[0] != span:
            note = ledger_message(
                conversation.ledger,
                start=span[0],
                facts=span[1],
                max_tokens=self.budget.ledger_max_tokens,
            )
            self._note = (span, note)
        return self._note[1]

    def compose_payload(
        self, system: SystemPrompt, tools: Sequence[ToolSpec], conversation: Conversation
    ) -> Payload:
        """The next request, with the server-side edits this strategy asks for, if any."""
        payload = super().compose_payload(system, tools, conversation)
        return with_edits(payload, self.server_edits(conversation, summary=False))

    def compaction_payload(self, conversation: Conversation) -> Payload:
        """The summary request, with the same server-side edits as the turns."""
        payload = super().compaction_payload(conversation)
        return with_edits(payload, self.server_edits(conversation, summary=True))

    def server_edits(self, conversation: Conversation, *, summary: bool) -> list[dict[str, Any]]:
        """The `context_management` edits of the next request (docs/context.md,
        "Server-side context management"): with `tool_result_clearing = "server"`, the
        clearing of older tool results in batches of a strip batch's size."""
        if self.tool_result_clearing != "server":
            return []
        threshold = self.budget.compact_threshold
        cap = max(1, threshold // CLEAR_SHARE_OF_THRESHOLD)
        batch = min(self.strip_batch_tokens or cap, cap)
        return [clear_tool_uses_edit(keep=self.budget.keep_recent_steps, clear_at_least=batch)]

    def fits(self, conversation: Conversation, ready: ReadySummary) -> bool:
        """Whether `ready` can be used now: with the steps appended since its request kept
        whole beside it, the context would end under the threshold."""
        if ready.text is None:
            return True  # the fallback replaces it, about everything
        lead = self._summary_lead(ready.text, self.compact_prompt)
        tokens = self.whole_from_tokens(conversation, lead, ready.through_seq + 1)
        return tokens < self.budget.compact_threshold

    def _still_fits(self, conversation: Conversation, ready: ReadySummary) -> ReadySummary | None:
        """`ready`, unless the steps appended since its request, which must stay whole, would
        leave the context over the threshold with it (the next step would compact again):
        then it is dropped (a warning says so) and the summary is asked for again, about
        everything. Over the target but under the threshold, it is used (with the warning
        any compaction over its target gives)."""
        assert ready.text is not None
        lead = self._summary_lead(ready.text, self.compact_prompt)
        newer = sum(e.step.seq > ready.through_seq for e in conversation.entries)
        tokens = self.whole_from_tokens(conversation, lead, ready.through_seq + 1)
        target = self.budget.target_tokens
        if tokens < self.budget.compact_threshold:
            return ready
        self.on_event(
            ContextWarningEvent(
                reason=f"the summary asked for in the background leaves {newer} newer steps "
                f"({tokens} tokens with it) over the threshold: asked for again",
                kept_steps=newer,
                keep_recent_steps=self.budget.keep_recent_steps,
                tokens_after=tokens,
                target_tokens=target,
            )
        )
        return None

    def summary_request(self, conversation: Conversation) -> Payload:
        """The compaction request for the history as it stands: the turn payload laid out as
        the request before it (so its prefix is read from the cache), the compact prompt
        after it. Asked for at the threshold, or in the background before it."""
        self._sync(conversation)
        self._reuse = conversation.composed_layout
        try:
            return self.compaction_payload(conversation)
        finally:
            self._reuse = None

    async def compact(
        self,
        conversation: Conversation,
        summarize: Summarizer,
        *,
        ready: ReadySummary | None = None,
    ) -> Compaction:
        """Ask for the summary on the same payload (or take the one `ready`, requested
        earlier); fall back to extraction if it failed."""
        if not conversation.entries:
            raise UsageError("nothing to compact: the conversation holds no step yet")
        self._sync(conversation)
        if ready is not None and ready.text is not None:
            ready = self._still_fits(conversation, ready)
        started = self.clock.now() if ready is None else ready.started
        tokens_before = conversation.context_tokens
        if ready is None:
            text, reason = await self.call_summarizer(summarize, self.summary_request(conversation))
        else:
            text, reason = ready.text, ready.reason
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
        keep = self.budget.keep_recent_steps
        whole_from = None
        if ready is not None:
            # The recent N stay whole, and so do all the steps after those the summary's
            # request showed, however many: it says nothing of them.
            whole_from = ready.through_seq + 1
            keep = max(keep, sum(e.step.seq >= whole_from for e in conversation.entries))
        return self.finish_compaction(
            conversation,
            keep=keep,
            summary_for=lambda _: (summary, lead),
            prompt=self.compact_prompt,
            mode=mode,
            tokens_before=tokens_before,
            started=started,
            fallback_reason=reason if mode == "fallback" else None,
            expected_keep=keep,
            whole_from=whole_from,
            waited_ms=None if ready is None else ready.waited_ms,
        )


def _round_opened_since(conversation: Conversation) -> bool:
    """Whether a round opened after the newest step (so it holds no step yet)."""
    entries = conversation.entries
    return bool(entries) and len(conversation.round_entries) - 1 > entries[-1].round_index
