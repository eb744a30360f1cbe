"""The `Conversation`: rounds of steps, a carried summary, the key-fact ledger, the account.

Every change goes through a record (`records.py`): `start_round`, `append_step`,
`register_facts` and a strategy's `compact` each build one and `apply` it, and return it
for the actor to journal. `Conversation.replay(records)` applies the same records to a new
conversation, so a restart rebuilds exactly what was there, compactions included.

Each step is rendered and estimated once, when it arrives, and kept beside the model
(`entries`); strategies compose payloads from those pieces and the account tracks the
context size, so no per-turn operation walks the whole history.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from baton.context.accounting import TokenAccount
from baton.context.events import CompactionMode
from baton.context.ledger import KeyFact, KeyFactLedger, path_facts
from baton.context.payload import Message
from baton.context.records import (
    Compaction,
    FactsRegistered,
    RoundStarted,
    StepAppended,
    parse_record,
)
from baton.context.steps import (
    Round,
    Step,
    StepLayout,
    build_step,
    render_assistant,
    render_last_text,
    render_results,
    render_transcript,
    render_user,
)
from baton.context.tokens import estimate_message_tokens
from baton.context.truncation import truncate_step
from baton.context.usage import Usage
from baton.errors import UsageError

StepView = Literal["plain", "thinking", "transcript"]
"""How a step shows: without thinking blocks, with them as received, or retold as user text."""


@dataclass(slots=True)
class StepEntry:
    """A step with its rendered messages and their raw token estimates, computed once.

    A step with thinking blocks also has them rendered in (`thinking`) and retold as user
    text (`transcript`); which one a payload shows is `Conversation.view_of`'s choice.
    """

    step: Step
    round_index: int
    assistant: Message | None
    assistant_tokens: int
    results: Message | None
    results_tokens: int
    last_text: Message | None
    last_text_tokens: int
    thinking: Message | None = None
    thinking_tokens: int = 0
    transcript: Message | None = None
    transcript_tokens: int = 0

    @property
    def whole_tokens(self) -> int:
        """Raw estimate of the step shown whole (assistant message and results)."""
        return self.assistant_tokens + self.results_tokens

    def shown(self, view: StepView) -> list[tuple[Message | None, int]]:
        """The messages (and their raw estimates) the step adds to a payload in `view`."""
        if view == "thinking" and self.thinking is not None:
            return [(self.thinking, self.thinking_tokens), (self.results, self.results_tokens)]
        if view == "transcript" and self.transcript is not None:
            return [(self.transcript, self.transcript_tokens)]
        return [(self.assistant, self.assistant_tokens), (self.results, self.results_tokens)]


@dataclass(slots=True)
class RoundEntry:
    """A round's user input, rendered and estimated once."""

    message: Message
    tokens: int


def _tokens(message: Message | None) -> int:
    return estimate_message_tokens(message) if message is not None else 0


def step_entry(step: Step, round_index: int) -> StepEntry:
    """Render and estimate `step` once."""
    assistant = render_assistant(step)
    results = render_results(step)
    last_text = render_last_text(step)
    entry = StepEntry(
        step=step,
        round_index=round_index,
        assistant=assistant,
        assistant_tokens=_tokens(assistant),
        results=results,
        results_tokens=_tokens(results),
        last_text=last_text,
        last_text_tokens=_tokens(last_text),
    )
    if step.has_thinking:
        entry.thinking = render_assistant(step, thinking=True)
        entry.thinking_tokens = _tokens(entry.thinking)
        entry.transcript = render_transcript(step)
        entry.transcript_tokens = _tokens(entry.transcript)
    return entry


class CarriedSummary(BaseModel):
    """What a compaction left in place of the older history."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = Field(min_length=1)
    prompt: str | None = None
    mode: CompactionMode
    strategy: str
    block: dict[str, Any] | None = Field(
        None, description="the server's compaction block it came as, sent back verbatim"
    )


MAIN_CONVERSATION = "main"
"""The id of an agent's own conversation, where its `Prompt`s go; each scenario run it is
dispatched gets a conversation of its own."""


class Conversation(BaseModel):
    """An agent's conversation: its rounds, carried summary and key facts (JSON-serialisable).

    `model_dump_json()` is a whole snapshot; journaling the records returned by each mutation
    is the step-by-step alternative (`replay`).
    """

    model_config = ConfigDict(extra="forbid")

    id: str = MAIN_CONVERSATION
    rounds: list[Round] = Field(default_factory=list)
    summary: CarriedSummary | None = None
    facts: list[KeyFact] = Field(default_factory=list)
    fact_seqs: list[int] = Field(
        default_factory=list,
        description="per fact, `next_seq` when it was registered: it came from an earlier step",
    )
    facts_summarized: int = Field(
        0, ge=0, description="facts registered when the last compaction merged the ledger"
    )
    next_seq: int = Field(0, ge=0, description="seq of the next step")
    next_round: int = Field(0, ge=0, description="seq of the next round")
    compactions: int = Field(0, ge=0)
    steps_since_compaction: int = Field(0, ge=0)
    thinking_from: int = Field(
        0, ge=0, description="steps before this seq had their thinking invalidated by a compaction"
    )

    _entries: list[StepEntry] = PrivateAttr(default_factory=list)
    _round_entries: list[RoundEntry] = PrivateAttr(default_factory=list)
    _ledger: KeyFactLedger = PrivateAttr(default_factory=KeyFactLedger)
    _account: TokenAccount = PrivateAttr(default_factory=TokenAccount)
    _tool_ids: set[str] = PrivateAttr(default_factory=set)
    _revision: int = PrivateAttr(0)
    _pinned: StepLayout | None = PrivateAttr(None)
    _composed_layout: StepLayout | None = PrivateAttr(None)

    def model_post_init(self, __context: Any) -> None:
        self._ledger = KeyFactLedger(self.facts)
        # A snapshot from before registration seqs: its facts count as the oldest.
        self.fact_seqs[:0] = [0] * max(0, len(self.facts) - len(self.fact_seqs))
        self._reindex()
        for entry in self._round_entries:
            self._account.add(entry.tokens)
        for step_entry in self._entries:
            self._account.add(step_entry.whole_tokens)

    # --- reading ------------------------------------------------------------------------

    @property
    def entries(self) -> Sequence[StepEntry]:
        """The held steps, oldest first, with their rendered messages (for strategies)."""
        return self._entries

    @property
    def round_entries(self) -> Sequence[RoundEntry]:
        """The held rounds' rendered inputs, aligned with `rounds` (for strategies)."""
        return self._round_entries

    @property
    def ledger(self) -> KeyFactLedger:
        """The key facts registered so far."""
        return self._ledger

    def facts_before(self, seq: int) -> int:
        """How many facts were registered before step `seq` was appended (so none of them
        came from that step or a later one)."""
        return bisect_right(self.fact_seqs, seq)

    @property
    def account(self) -> TokenAccount:
        """The running token account of this conversation."""
        return self._account

    @property
    def context_tokens(self) -> int:
        """The current context size: last usage plus calibrated additions (docs/context.md,
        "Token accounting")."""
        return self._account.context_tokens

    @property
    def revision(self) -> int:
        """Changes whenever steps are removed or rewritten (a compaction, a reload)."""
        return self._revision

    @property
    def last_step(self) -> Step | None:
        """The newest step, if any."""
        return self._entries[-1].step if self._entries else None

    @property
    def pinned_layout(self) -> StepLayout | None:
        """The layout the open round must keep: that of its first step with live thinking.

        Thinking blocks go back only behind the prefix they were produced after, so once a
        step of the open round carries them, every later request of the round shows the
        history as that step's request did (docs/models.md, "Thinking")."""
        return self._pinned

    def view_of(self, entry: StepEntry) -> StepView:
        """How `entry` shows in the next payload.

        Thinking blocks go back only within the open round (older turns may drop them), and
        only when produced after the last compaction, which changed what precedes them; a
        step of the open round whose thinking a compaction invalidated is retold as text.
        """
        if entry.thinking is None or entry.round_index != len(self.rounds) - 1:
            return "plain"
        return "thinking" if entry.step.seq >= self.thinking_from else "transcript"

    @property
    def composed_layout(self) -> StepLayout | None:
        """The layout of the payload composed last (None before the first, or after a
        round started)."""
        return self._composed_layout

    def note_layout(self, layout: StepLayout) -> None:
        """Record the layout of the payload just composed; the next step remembers it."""
        self._composed_layout = layout

    @property
    def awaiting_reply(self) -> bool:
        """Whether the next move is the model's: a fresh round, or tool results to read."""
        if not self.rounds:
            return False
        steps = self.rounds[-1].steps
        return not steps or steps[-1].has_tool_use

    # --- changing (each returns the record to journal) -----------------------------------

    def start_round(self, text: str, *, key: str | None = None) -> RoundStarted:
        """Open a round with user input `text` (a prompt or a rendered handoff package);
        `key` names the request behind it, so a redelivered request is recognised."""
        if not text.strip():
            raise UsageError("a round needs a non-empty user input")
        record = RoundStarted(round=self.next_round, text=text, key=key)
        self.apply(record)
        return record

    def append_step(
        self,
        content: Sequence[Mapping[str, Any] | BaseModel],
        results: Sequence[Mapping[str, Any] | BaseModel] = (),
        usage: Usage | Mapping[str, int] | None = None,
        *,
        stop_reason: str | None = None,
        sent_estimate: int | None = None,
        layout: StepLayout | None = None,
    ) -> StepAppended:
        """Add the model's answer (`content` blocks), its tool results and the call's usage.

        `sent_estimate` is the raw estimate of the payload answered and `layout` how it laid
        out the history; by default those of the payload last composed for this
        conversation."""
        if sent_estimate is None:
            sent_estimate = self._account.sent_estimate
        if layout is None:
            layout = self._composed_layout
        step = build_step(
            self.next_seq,
            content,
            results,
            usage,
            stop_reason,
            sent_estimate=sent_estimate,
            layout=layout,
        )
        record = StepAppended(step=step)
        self.apply(record)
        return record

    def register_facts(self, facts: Iterable[KeyFact]) -> FactsRegistered | None:
        """Add facts to the ledger; the record to journal, or None if none was new."""
        known = {(fact.kind, fact.value) for fact in self.facts}
        new = []
        for fact in facts:
            if (fact.kind, fact.value) not in known:
                known.add((fact.kind, fact.value))
                new.append(fact)
        if not new:
            return None
        record = FactsRegistered(facts=new)
        self.apply(record)
        return record

    def register_paths(
        self, paths: Iterable[str], *, source: str | None = None
    ) -> FactsRegistered | None:
        """Register paths (e.g. a handoff package's, a written file) in the ledger."""
        return self.register_facts(path_facts(paths, source=source))

    def apply(self, record: Any) -> None:
        """Apply one record (a model or its journal dict); `UsageError` if it does not fit."""
        parsed = parse_record(record)
        if isinstance(parsed, RoundStarted):
            self._apply_round(parsed)
        elif isinstance(parsed, StepAppended):
            self._apply_step(parsed.step)
        elif isinstance(parsed, FactsRegistered):
            self._apply_facts(parsed.facts)
        else:
            self._apply_compaction(parsed)

    @classmethod
    def replay(
        cls, records: Iterable[Any], conversation_id: str = MAIN_CONVERSATION
    ) -> Conversation:
        """A conversation rebuilt from its journal records, in order."""
        conversation = cls(id=conversation_id)
        for record in records:
            conversation.apply(record)
        return conversation

    # --- internals ------------------------------------------------------------------------

    def _apply_round(self, record: RoundStarted) -> None:
        if record.round != self.next_round:
            raise UsageError(f"round {record.round} out of order: expected {self.next_round}")
        self.rounds.append(Round(seq=record.round, user=record.text))
        message = render_user(record.text)
        entry = RoundEntry(message, estimate_message_tokens(message))
        self._round_entries.append(entry)
        self._account.add(entry.tokens)
        self.next_round += 1
        self._pinned = None
        self._composed_layout = None

    def _apply_step(self, step: Step) -> None:
        if not self.rounds:
            raise UsageError("a step needs a round: start_round first")
        if step.seq != self.next_seq:
            raise UsageError(f"step {step.seq} out of order: expected {self.next_seq}")
        # Private attributes are looked up through pydantic's `__getattr__`: once each here,
        # since a rebuild runs this for every step of the journal.
        tool_ids, account = self._tool_ids, self._account
        uses = [use.id for use in step.tool_uses]
        reused = tool_ids.intersection(uses)
        if reused:
            raise UsageError(f"tool_use ids already used in this conversation: {sorted(reused)}")
        tool_ids.update(uses)
        self.rounds[-1].steps.append(step)
        entry = step_entry(step, len(self.rounds) - 1)
        self._entries.append(entry)
        self._pin(step)
        if step.layout is not None:
            # The payload last composed is the one this step answers: a conversation rebuilt
            # from its journal lays out its next summary request as the live one did.
            self._composed_layout = step.layout
        if step.usage is not None:
            if step.sent_estimate is not None:
                account.note_sent(step.sent_estimate)  # as the live call did
            account.observe(step.usage)
            account.add(entry.results_tokens)
        else:
            account.add(entry.whole_tokens)
        self.next_seq += 1
        self.steps_since_compaction += 1

    def _apply_facts(self, facts: list[KeyFact]) -> None:
        new = self._ledger.add(facts)
        self.facts.extend(new)
        self.fact_seqs.extend([self.next_seq] * len(new))

    def _apply_compaction(self, record: Compaction) -> None:
        first = record.first_kept_seq
        if first > self.next_seq:
            raise UsageError(f"compaction keeps from step {first}, beyond this conversation")
        rounds: list[Round] = []
        spec = record.truncation
        cut = set(record.truncated)
        kept_any = False
        for index, round_ in enumerate(self.rounds):
            steps = [s for s in round_.steps if s.seq >= first]
            is_last = index == len(self.rounds) - 1
            if not steps and not kept_any and not is_last:
                continue
            if steps:
                kept_any = True
            if cut:
                steps = [truncate_step(s, spec, cut)[0] for s in steps]
            rounds.append(Round(seq=round_.seq, user=round_.user, steps=steps))
        self.rounds = rounds
        if record.summary is not None:
            self.summary = CarriedSummary(
                text=record.summary,
                prompt=record.prompt,
                mode=record.mode,
                strategy=record.strategy,
                block=record.block,
            )
        self.compactions += 1
        # The facts found in text are kept bounded here, where no pinned round counts them
        # (docs/context.md, "Key-fact ledger").
        kept = self._ledger.prune()
        if kept is not None:
            self.facts = [self.facts[i] for i in kept]
            self.fact_seqs = [self.fact_seqs[i] for i in kept]
        self.facts_summarized = len(self.facts)  # every strategy merges the whole ledger
        self.steps_since_compaction = 0
        # Whatever the compaction kept now follows a summary, not the history its thinking
        # was produced after.
        self.thinking_from = self.next_seq
        self._reindex()
        self._account.reset(record.tokens_after)

    def _reindex(self) -> None:
        self._entries = [
            step_entry(step, index)
            for index, round_ in enumerate(self.rounds)
            for step in round_.steps
        ]
        self._round_entries = []
        for round_ in self.rounds:
            message = render_user(round_.user)
            self._round_entries.append(RoundEntry(message, estimate_message_tokens(message)))
        self._tool_ids = {use.id for entry in self._entries for use in entry.step.tool_uses}
        self._revision += 1
        self._pinned = None
        self._composed_layout = None
        if self.rounds:
            for step in self.rounds[-1].steps:
                self._pin(step)

    def _pin(self, step: Step) -> None:
        if (
            self._pinned is None
            and step.layout is not None
            and step.has_thinking
            and step.seq >= self.thinking_from
        ):
            self._pinned = step.layout
