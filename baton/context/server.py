"""`server` (docs/context.md, "Server-side context management"): `summarize`'s assembly, with
the Messages API writing the summary.

Every turn asks for `compact_20260112` with the compaction threshold as its trigger, the
agent's compact prompt and the key-fact ledger as its instructions, and a pause after the
compaction. Once a request reaches the trigger the server answers with only a `compaction`
block (`stop_reason: "compaction"`); the agent hands it to `server_compacted`, which keeps
the recent N steps whole after it, as `summarize` does, and journals the record with the
block, so a resumed agent sends the same block and never pays for the compaction again.
The block is checked for the ledger's facts; those it lacks are shown beside it in a
`<key_facts>` note.

Later requests start with the block (after a one-line user turn: the server ignores what
precedes the latest compaction block, and the request still opens with a user turn). The
agent never compacts on its own here, except when a request overflows the window anyway:
then it compacts as `summarize` does, with the edit declared so the block may be sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from baton.context._assembly import Lead
from baton.context.conversation import CarriedSummary, Conversation
from baton.context.edit_requests import compact_edit
from baton.context.ledger import KeyFact, KeyFactLedger
from baton.context.ledger_view import ledger_message
from baton.context.payload import CompactionBlock
from baton.context.records import Compaction
from baton.context.server_edits import MIN_COMPACT_TRIGGER
from baton.context.steps import render_user
from baton.context.strategy import ContextBudget
from baton.context.summarize import SummarizeStrategy
from baton.context.usage import Usage
from baton.errors import UsageError

_BLOCK_FIELDS = ("type", "content", "encrypted_content", "signature", "tool_changes")


class ServerStrategy(SummarizeStrategy):
    """`summarize`'s layout; the summary written by the server's `compact_20260112`."""

    name = "server"
    compacts_on_server = True

    def __init__(self, budget: ContextBudget | None = None, **kwargs: Any) -> None:
        super().__init__(budget, **kwargs)
        if self.budget.compact_threshold < MIN_COMPACT_TRIGGER:
            raise UsageError(
                f'strategy = "server" needs compact_threshold >= {MIN_COMPACT_TRIGGER:,} (the '
                f"least the Messages API compacts at); it is {self.budget.compact_threshold:,}"
            )
        self._carried: tuple[int, CarriedSummary, list[KeyFact]] | None = None

    def should_compact(
        self, conversation: Conversation, budget: ContextBudget | None = None
    ) -> bool:
        """Never by itself: the server compacts when a request reaches its trigger."""
        return False

    def server_edits(self, conversation: Conversation, *, summary: bool) -> list[dict[str, Any]]:
        """The compact edit (and clearing, if configured). A summary request of baton's own
        (the window overflowed) still declares it, or a block in the history would be
        refused, with its trigger past the window so the server does not compact it."""
        budget = self.budget
        trigger = budget.context_window if summary else budget.compact_threshold
        facts, _ = conversation.ledger.shown(max_tokens=budget.ledger_max_tokens)
        edit = compact_edit(trigger, self.compact_prompt, pause=True, facts=facts)
        return [edit, *super().server_edits(conversation, summary=summary)]

    def server_compacted(
        self,
        conversation: Conversation,
        block: Mapping[str, Any],
        usage: Usage,
        *,
        started: float,
    ) -> Compaction | None:
        """Apply the server's compaction `block` to `conversation`: the recent N steps stay
        whole after it (fewer while over the target). None when the block holds no summary
        (the server failed to write one and treats the block as nothing)."""
        text = block.get("content")
        if not isinstance(text, str) or not text.strip() or not conversation.entries:
            return None
        self._sync(conversation)
        kept_block = {k: block[k] for k in _BLOCK_FIELDS if k in block}
        missing = self._missing_facts(conversation.ledger, text)
        lead = self._block_lead(kept_block, self.compact_prompt, missing)
        return self.finish_compaction(
            conversation,
            keep=self.budget.keep_recent_steps,
            summary_for=lambda _: (text, lead),
            prompt=self.compact_prompt,
            mode="llm",
            tokens_before=conversation.context_tokens,
            started=started,
            server={
                "by": "server",
                "block": kept_block,
                "server_input_tokens": usage.compaction_input_tokens
                + usage.compaction_cache_creation_input_tokens
                + usage.compaction_cache_read_input_tokens,
                "server_output_tokens": usage.compaction_output_tokens,
                "facts_carried": len(missing),
            },
        )

    def _missing_facts(self, ledger: KeyFactLedger, text: str) -> list[KeyFact]:
        """The ledger's facts (as a request shows them) the summary does not spell out."""
        facts, _ = ledger.shown(max_tokens=self.budget.ledger_max_tokens)
        return [fact for fact in facts if fact.value not in text]

    def _block_lead(
        self, block: Mapping[str, Any], prompt: str | None, missing: list[KeyFact]
    ) -> Lead:
        lead = Lead()
        lead.builder.add(render_user(prompt or self.compact_prompt))
        compaction = cast(CompactionBlock, dict(block))
        lead.builder.add({"role": "assistant", "content": [compaction]})
        lead.anchor = ("message", 1, 0)
        note = (
            ledger_message(
                KeyFactLedger(missing), facts=None, max_tokens=self.budget.ledger_max_tokens
            )
            if missing
            else None
        )
        if note is not None:
            lead.builder.add(note)
            lead.anchor = ("message", 2, 0)
        return lead

    def _lead(self, conversation: Conversation) -> Lead:
        summary = conversation.summary
        if summary is None or summary.block is None:
            return super()._lead(conversation)
        carried = self._carried
        if carried is None or carried[1] is not summary or carried[0] != len(conversation.facts):
            # The facts the block lacked when it arrived: those registered before it.
            ledger = KeyFactLedger(conversation.facts[: conversation.facts_summarized])
            carried = (len(conversation.facts), summary, self._missing_facts(ledger, summary.text))
            self._carried = carried
        return self._block_lead(summary.block, summary.prompt, carried[2])
