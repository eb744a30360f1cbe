"""What the three strategies share: the cached prefix, the carried summary's layout, the
summary call under its timeout, and the compaction kernel.

The kernel is the same for every strategy: keep the last `keep` steps whole (their round's
input carried in front), cut their long tool results, then keep fewer steps while the result
is over the target (never below one), apply the record to the conversation, report events.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio

from baton.context._assembly import Builder, Lead, Prefix, add_entry, add_rounds_from
from baton.context.caching import Anchor, place_breakpoints, prefix_anchor
from baton.context.conversation import Conversation, StepEntry, StepView, step_entry
from baton.context.events import (
    CompactionMode,
    ContextWarningEvent,
    EventSink,
    ToolResultTruncatedEvent,
    ignore_events,
)
from baton.context.payload import Payload, ToolSpec
from baton.context.prompt_cache import CacheTTL
from baton.context.records import Compaction
from baton.context.steps import StepLayout, render_text, render_user
from baton.context.strategy import Clock, ContextBudget, Summarizer, SystemClock, SystemPrompt
from baton.context.summary_format import COMPACT_PROMPT, GenericSummary, SummaryBase, render_summary
from baton.context.tokens import (
    estimate_block_tokens,
    estimate_json_tokens,
    estimate_text_tokens,
)
from baton.context.truncation import Truncated, truncate_step
from baton.errors import UsageError

SUMMARY_HEADING = "Summary of the earlier conversation (older turns were compacted):"


def recent_start(count: int, budget: ContextBudget, stride: int) -> int:
    """Index of the first of `count` steps shown whole: the last N, moved by `stride`.

    A pure function of the count, so a replayed conversation lays out as the live one did:
    the recent part holds N to N + stride - 1 steps."""
    over = count - budget.keep_recent_steps
    return max(0, over // stride * stride)


class StrategyBase:
    """Common machinery; subclasses define `name`, `_reset`, `_advance` and `_body`."""

    name = "base"
    lasting_ttl: CacheTTL = "1h"
    """The TTL of every breakpoint but the newest message's: the prefix, summary and history
    a conversation re-sends after a wait (docs/context.md, "Prompt-cache breakpoints")."""

    def __init__(
        self,
        budget: ContextBudget | None = None,
        *,
        summary_schema: type[SummaryBase] = GenericSummary,
        on_event: EventSink | None = None,
        clock: Clock | None = None,
        compact_prompt: str = COMPACT_PROMPT,
    ) -> None:
        self.budget = budget or ContextBudget()
        self.summary_schema = summary_schema
        self.on_event = on_event or ignore_events
        self.clock = clock or SystemClock()
        self.compact_prompt = compact_prompt
        self._prefix = Prefix()
        self._synced: Conversation | None = None
        self._synced_revision = -1

    # --- per turn ----------------------------------------------------------------------

    def on_turn_complete(self, conversation: Conversation) -> None:
        """Catch up with the steps appended since the last call (amortised O(1) per step)."""
        self._sync(conversation)

    def should_compact(
        self, conversation: Conversation, budget: ContextBudget | None = None
    ) -> bool:
        """Over the threshold, with at least one step since the last compaction."""
        budget = budget or self.budget
        if conversation.steps_since_compaction < 1 or not conversation.entries:
            return False
        return conversation.context_tokens > budget.compact_threshold

    def compose_payload(
        self, system: SystemPrompt, tools: Sequence[ToolSpec], conversation: Conversation
    ) -> Payload:
        """The next request; `UsageError` when the conversation is not waiting for the model."""
        if not conversation.awaiting_reply:
            raise UsageError(
                "nothing for the model to answer: start a round, or append a step with tool calls"
            )
        payload, raw = self._compose(system, tools, conversation, last_anchor=True)
        conversation.account.note_sent(raw)
        conversation.note_layout(self._layout(conversation))
        return payload

    def use_prefix(self, system: SystemPrompt, tools: Sequence[ToolSpec]) -> None:
        """The system prompt and tools the next requests carry. `compose_payload` sets them
        too; a compaction due before any request of this process (a conversation resumed
        from its journal) needs them first, or its summary request and its kept-size
        estimate would leave them out."""
        self._prefix_for(system, tools)

    def _sync(self, conversation: Conversation) -> None:
        if conversation is not self._synced or conversation.revision != self._synced_revision:
            self._synced = conversation
            self._synced_revision = conversation.revision
            self._reset(conversation)
        self._advance(conversation)

    def _reset(self, conversation: Conversation) -> None:
        """Forget per-conversation state (new conversation, or steps removed)."""

    def _advance(self, conversation: Conversation) -> None:
        """Fold in the steps appended since the last sync."""

    def _body(self, conversation: Conversation, builder: Builder) -> list[Anchor | None]:
        """Add the history and recent parts; return extra breakpoint anchors."""
        add_rounds_from(builder, conversation, 0)
        return []

    def _first_whole(self) -> int:
        """Index (in `conversation.entries`) of the oldest step the payload shows whole."""
        return 0

    def _layout(self, conversation: Conversation) -> StepLayout:
        """How the payload just composed laid out the history (recorded on its step)."""
        entries = conversation.entries
        index = self._first_whole()
        seq = entries[index].step.seq if index < len(entries) else conversation.next_seq
        return StepLayout(first_whole=seq)

    def _natural_after(self, conversation: Conversation, ahead: int) -> int:
        """Where the strategy's own rule would start the whole part once `ahead` more steps
        are held (0: for the next request); 0 for strategies that strip nothing in batches."""
        return 0

    def strip_relief(self, conversation: Conversation, *, within: int) -> int:
        """The tokens a strip batch frees that is due by the request after `within` more
        steps: the steps that leave the whole part by then, shown folded instead
        (docs/context.md, "Background compaction"); 0 when none is due, or while a round
        pinned by thinking keeps its layout.

        Only the steps held now count, so a look `within` steps ahead sees the batch those
        steps' ageing out makes, not what the new steps themselves will add."""
        entries = conversation.entries
        if conversation.pinned_layout is not None or not entries:
            return 0
        shown = conversation.composed_layout
        start = self._first_whole()
        if shown is not None:
            start = bisect_left(entries, shown.first_whole, key=lambda e: e.step.seq)
        end = start
        for ahead in range(within + 1):
            end = max(end, self._natural_after(conversation, ahead))
        raw = sum(e.whole_tokens - e.last_text_tokens for e in entries[start:end])
        return conversation.account.calibration.apply(raw)

    def _start_for(self, conversation: Conversation, natural: int) -> int:
        """Where the whole part starts: where the open round's thinking pinned it, else
        `natural` (the strategy's own choice)."""
        pinned = conversation.pinned_layout
        if pinned is None:
            return natural
        return bisect_left(conversation.entries, pinned.first_whole, key=lambda e: e.step.seq)

    # --- assembly ------------------------------------------------------------------------

    def _prefix_for(self, system: SystemPrompt, tools: Sequence[ToolSpec]) -> Prefix:
        cached = self._prefix
        same = (cached.system_in is system or cached.system_in == system) and (
            cached.tools_in is tools or cached.tools_in == tools
        )
        if not same:
            if isinstance(system, str):
                blocks = [render_text(system)] if system.strip() else []
            else:
                blocks = [render_text(b["text"]) for b in system or () if b["text"].strip()]
            specs: list[ToolSpec] = [
                {k: v for k, v in t.items() if k != "cache_control"}  # type: ignore[misc]
                for t in tools
            ]
            tokens = sum(estimate_block_tokens(b) for b in blocks) + sum(
                estimate_json_tokens(s) for s in specs
            )
            self._prefix = Prefix(system, tools, blocks, specs, tokens)
        return self._prefix

    def _summary_lead(self, text: str | None, prompt: str | None) -> Lead:
        """The carried summary as the configured role shows it."""
        lead = Lead()
        if text is None:
            return lead
        body = render_summary(text)
        if self.budget.summary_role == "system":
            lead.system = [render_text(f"{SUMMARY_HEADING}\n{body}")]
            return lead
        lead.builder.add(render_user(prompt or self.compact_prompt))
        lead.builder.add({"role": "assistant", "content": [render_text(body)]})
        lead.anchor = ("message", 1, 0)
        return lead

    def _lead(self, conversation: Conversation) -> Lead:
        summary = conversation.summary
        if summary is None:
            return Lead()
        return self._summary_lead(summary.text, summary.prompt)

    def _compose(
        self,
        system: SystemPrompt,
        tools: Sequence[ToolSpec],
        conversation: Conversation,
        *,
        last_anchor: bool,
    ) -> tuple[Payload, int]:
        self._sync(conversation)
        prefix = self._prefix_for(system, tools)
        lead = self._lead(conversation)
        builder = Builder()
        builder.extend(lead.builder)
        body_anchors = self._body(conversation, builder)
        payload: Payload = {
            "max_tokens": self.budget.max_output_tokens,
            "messages": builder.messages,
        }
        if (thinking := self.budget.thinking_param) is not None:
            payload["thinking"] = thinking
        if (output_config := self.budget.output_config) is not None:
            payload["output_config"] = output_config
        system_blocks = [*prefix.system, *lead.system]
        if system_blocks:
            payload["system"] = system_blocks
        if prefix.tools:
            payload["tools"] = list(prefix.tools)
        summary_anchor = lead.anchor
        if lead.system:
            summary_anchor = ("system", len(system_blocks) - 1)
        anchors = [prefix_anchor(prefix.system, prefix.tools), summary_anchor, *body_anchors]
        if last_anchor:
            anchors.append(builder.end_anchor())
        raw = prefix.tokens + lead.system_tokens + builder.tokens
        return place_breakpoints(payload, anchors, lasting_ttl=self.lasting_ttl), raw

    def compaction_payload(self, conversation: Conversation) -> Payload:
        """The turn payload plus the compact prompt: same prefix, so the cache is reused."""
        payload, _ = self._compose(
            self._prefix.system_in, self._prefix.tools_in or [], conversation, last_anchor=True
        )
        messages = list(payload["messages"])
        prompt = render_text(self.compact_prompt)
        if messages and messages[-1]["role"] == "user":
            last = messages[-1]
            messages[-1] = {"role": "user", "content": [*last["content"], prompt]}
        else:
            messages.append({"role": "user", "content": [prompt]})
        payload["messages"] = messages
        payload["max_tokens"] = self.budget.summary_request_tokens
        # A summary would be asked for at temperature 0, but API version 2026-10-21 (what SDK
        # 2.x sends) answers any sampling parameter with a 400, so the summary call cannot pin
        # it (docs/context.md, "Compaction").
        return payload

    # --- compaction ------------------------------------------------------------------------

    async def call_summarizer(
        self, summarize: Summarizer, payload: Payload
    ) -> tuple[str | None, str]:
        """The model's summary text, or None and why not (failure or timeout)."""
        first: list[tuple[str | None, str]] = []

        async with anyio.create_task_group() as tg:

            async def call() -> None:
                try:
                    text = await summarize(payload)
                except Exception as exc:  # noqa: BLE001 - any failure means the fallback summary
                    first.append((None, f"summary call failed: {type(exc).__name__}: {exc}"))
                else:
                    ok = isinstance(text, str) and bool(text.strip())
                    first.append((text, "") if ok else (None, "summary call returned no text"))
                tg.cancel_scope.cancel()

            async def timer() -> None:
                await self.clock.sleep(self.budget.summary_timeout_s)
                first.append((None, f"summary timed out after {self.budget.summary_timeout_s:g}s"))
                tg.cancel_scope.cancel()

            tg.start_soon(call)
            tg.start_soon(timer)
        return first[0]

    def _kept_raw(self, conversation: Conversation, lead: Lead, kept: list[StepEntry]) -> int:
        builder = Builder()
        builder.extend(lead.builder)
        rounds = conversation.round_entries
        first_round = kept[0].round_index
        i = 0
        for r in range(first_round, len(rounds)):
            builder.add(rounds[r].message, rounds[r].tokens)
            while i < len(kept) and kept[i].round_index == r:
                # As the kept part will show once compacted: a compaction invalidates the
                # thinking of every step it keeps.
                open_round = kept[i].round_index == len(rounds) - 1
                view: StepView = "transcript" if open_round else "plain"
                add_entry(builder, conversation, kept[i], view)
                i += 1
        return self._prefix.tokens + lead.system_tokens + builder.tokens

    def whole_from_tokens(self, conversation: Conversation, lead: Lead, from_seq: int) -> int:
        """The compacted context's size after `lead` if every step from seq `from_seq` on
        stays whole (long results cut as a compaction cuts them); 0 when there is none."""
        spec = self.budget.truncation
        kept: list[StepEntry] = []
        for entry in conversation.entries:
            if entry.step.seq >= from_seq:
                step, cuts = truncate_step(entry.step, spec)
                kept.append(step_entry(step, entry.round_index) if cuts else entry)
        if not kept:
            return 0
        return conversation.account.calibration.apply(self._kept_raw(conversation, lead, kept))

    def finish_compaction(
        self,
        conversation: Conversation,
        *,
        keep: int,
        summary_for: Callable[[int], tuple[str | None, Lead]],
        prompt: str | None,
        mode: CompactionMode,
        tokens_before: int,
        started: float,
        fallback_reason: str | None = None,
        expected_keep: int | None = None,
        whole_from: int | None = None,
        waited_ms: float | None = None,
        server: Mapping[str, Any] | None = None,
    ) -> Compaction:
        """Keep `keep` steps (fewer while over target), apply, report; the record to journal.

        `summary_for(kept)` gives the summary text to carry (None: keep the current one) and
        how it shows, when `kept` steps stay whole. Steps from seq `whole_from` on are never
        dropped (a summary requested in the background does not cover them). `server`: the
        record's fields of a server-side compaction (its block and figures).
        """
        entries = conversation.entries
        if not entries:
            raise UsageError("nothing to compact: the conversation holds no step yet")
        spec = self.budget.truncation
        calibration = conversation.account.calibration
        cut: dict[int, list[Truncated]] = {}
        trimmed: list[StepEntry] = []
        for entry in entries[-max(1, min(keep, len(entries))) :]:
            step, cuts = truncate_step(entry.step, spec)
            cut[step.seq] = cuts
            trimmed.append(step_entry(step, entry.round_index) if cuts else entry)
        target = self.budget.target_tokens
        summary, lead = summary_for(len(trimmed))
        tokens_after = calibration.apply(self._kept_raw(conversation, lead, trimmed))
        uncovered = 0 if whole_from is None else sum(e.step.seq >= whole_from for e in trimmed)
        while tokens_after > target and len(trimmed) > max(1, uncovered):
            trimmed = trimmed[1:]
            summary, lead = summary_for(len(trimmed))
            tokens_after = calibration.apply(self._kept_raw(conversation, lead, trimmed))
        kept_cuts = [c for e in trimmed for c in cut[e.step.seq]]
        expected = min(expected_keep or keep, len(entries))
        warning = None
        if len(trimmed) < expected or tokens_after > target:
            warning = (
                f"kept {len(trimmed)} of {expected} recent steps; the compacted context is "
                f"{tokens_after} tokens against a target of {target}"
            )
        summary_tokens = calibration.apply(estimate_text_tokens(summary)) if summary else 0
        record = Compaction(
            strategy=self.name,
            mode=mode,
            summary=summary,
            prompt=prompt,
            first_kept_seq=trimmed[0].step.seq,
            truncated=[c.tool_use_id for c in kept_cuts],
            truncate_limit=spec.limit,
            truncate_head=spec.head,
            truncate_tail=spec.tail,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            kept_steps=len(trimmed),
            summary_tokens=summary_tokens,
            latency_ms=max(0.0, (self.clock.now() - started) * 1000),
            waited_ms=waited_ms,
            fallback_reason=fallback_reason,
            warning=warning,
            # Every strategy shows the whole ledger under the cap once compacted.
            ledger_dropped=conversation.ledger.shown(max_tokens=self.budget.ledger_max_tokens)[1],
            **(server or {}),
        )
        conversation.apply(record)
        for c in kept_cuts:
            self.on_event(_truncated_event(c))
        if warning is not None:
            self.on_event(
                ContextWarningEvent(
                    reason=warning,
                    kept_steps=len(trimmed),
                    keep_recent_steps=expected,
                    tokens_after=tokens_after,
                    target_tokens=target,
                )
            )
        self.on_event(record.event())
        return record


def _truncated_event(cut: Truncated) -> ToolResultTruncatedEvent:
    return ToolResultTruncatedEvent(
        tool_use_id=cut.tool_use_id, original_chars=cut.original_chars, kept_chars=cut.kept_chars
    )


class LedgerBlockStrategy(StrategyBase):
    """A strategy that shows the ledger in a block of its own (docs/context.md, "Key-fact
    ledger"): how many facts it shows is part of each step's layout, so a round pinned by
    thinking keeps showing the facts its first thinking step showed."""

    def _facts_shown(self, conversation: Conversation) -> int:
        pinned = conversation.pinned_layout
        return len(conversation.ledger) if pinned is None else pinned.facts

    def _layout(self, conversation: Conversation) -> StepLayout:
        layout = super()._layout(conversation)
        return layout.model_copy(update={"facts": self._facts_shown(conversation)})
