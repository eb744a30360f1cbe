"""`extract_state` (docs/context.md, "extract_state"): a typed working state instead of the
older conversation.

Each turn, the steps that leave the recent part (the last N, as in `summarize`) are folded
into a `WorkingState` (tools called, files read and written, paths, ids, pending items,
errors, the goal and final answer of each finished round) and that state is injected at the
head of the payload, in the first user turn, ahead of the round input it belongs with. The
extraction is deterministic and incremental: each step is folded once, with no model call.

A compaction folds everything but the recent N steps, carries the state as the summary (so a
replayed conversation resumes from it) and forgets the folded steps. `stride` works as in
`summarize`: the state is re-folded once per `stride` steps, so the payload in between only
grows at its end.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from baton.context._assembly import Builder, Lead, add_rounds_from
from baton.context._strategy_base import LedgerBlockStrategy, recent_start
from baton.context.caching import Anchor
from baton.context.conversation import Conversation
from baton.context.fallback import Extraction, step_texts
from baton.context.ledger import KeyFactLedger
from baton.context.records import Compaction
from baton.context.steps import Step, render_user
from baton.context.strategy import Summarizer
from baton.errors import UsageError

STATE_TAG = "working_state"
STATE_HEADING = "State extracted from the earlier steps of this conversation (no longer shown):"
_RECENT = 5  # goals, answers and errors: the latest few are what the next step needs
_CAP = 60  # paths, ids, files, pending: enough to act on, bounded so the state stays small
_EXCERPT = 400
_PATH_KEYS = ("path", "file_path", "filename", "dir", "directory", "paths", "files")
_WRITES = ("write", "edit", "create", "save", "append", "handoff", "return_to", "complete")
_READS = ("read", "list", "open", "view", "cat", "ls", "load")


def _excerpt(text: str, limit: int = _EXCERPT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def _remember(items: list[str], value: str, cap: int) -> None:
    # Most recent last; when full, the oldest goes: recency is what a working state is for.
    if not value:
        return
    if value in items:
        items.remove(value)
    items.append(value)
    del items[: max(0, len(items) - cap)]


class WorkingState(BaseModel):
    """The typed state `extract_state` keeps and injects."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["working_state"] = "working_state"
    rounds_folded: int = 0
    steps_folded: int = 0
    goals: list[str] = Field(default_factory=list, description="inputs of finished rounds")
    answers: list[str] = Field(default_factory=list, description="their final answers")
    tool_calls: dict[str, int] = Field(default_factory=dict)
    files_read: list[str] = Field(default_factory=list)
    files_written: list[str] = Field(default_factory=list)
    paths: list[str] = Field(default_factory=list)
    ids: list[str] = Field(default_factory=list)
    pending: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    earlier_summary: str | None = Field(None, description="a summary another strategy left")
    key_paths: dict[str, str] = Field(default_factory=dict)
    key_ids: dict[str, str] = Field(default_factory=dict)

    def fold_step(self, step: Step) -> None:
        """Take in what one step did."""
        self.steps_folded += 1
        calls = Counter(self.tool_calls)
        for use in step.tool_uses:
            calls[use.name] += 1
            name = use.name.lower()
            bucket = (
                self.files_written
                if any(w in name for w in _WRITES)
                else self.files_read
                if any(r in name for r in _READS)
                else self.paths
            )
            for key in _PATH_KEYS:
                value = use.input.get(key)
                values = value if isinstance(value, list) else [value]
                for item in values:
                    if isinstance(item, str):
                        _remember(bucket, item, _CAP)
        self.tool_calls = dict(calls)
        found = Extraction()
        for text in step_texts(step):
            found.feed(text)
        for path in found.paths:
            if path not in self.files_read and path not in self.files_written:
                _remember(self.paths, path, _CAP)
        for value in found.ids:
            _remember(self.ids, value, _CAP)
        for item in found.pending:
            _remember(self.pending, item, _CAP)
        for result in step.results:
            if result.is_error:
                _remember(self.errors, _excerpt(result.text, 200), _RECENT)

    def fold_round(self, user: str, answer: str | None) -> None:
        """A round is wholly folded: remember what was asked and what was answered."""
        self.rounds_folded += 1
        _remember(self.goals, _excerpt(user), _RECENT)
        if answer:
            _remember(self.answers, _excerpt(answer), _RECENT)

    @property
    def is_empty(self) -> bool:
        """Nothing folded and nothing carried: no need to show it."""
        return self == WorkingState()


@dataclass
class _Folding:
    """The state plus where folding stands; copied to try a compaction."""

    state: WorkingState = field(default_factory=WorkingState)
    upto: int = 0  # entries before this index are folded
    rounds_done: int = 0  # rounds before this index are recorded as finished
    answers: dict[int, str] = field(default_factory=dict)

    def fold(self, conversation: Conversation, end: int) -> None:
        entries = conversation.entries
        for entry in entries[self.upto : end]:
            self.state.fold_step(entry.step)
            if entry.step.text.strip():
                self.answers[entry.round_index] = entry.step.text
        self.upto = max(self.upto, end)
        finished = (
            entries[self.upto].round_index
            if self.upto < len(entries)
            else len(conversation.rounds) - 1
        )
        for r in range(self.rounds_done, finished):
            self.state.fold_round(conversation.rounds[r].user, self.answers.pop(r, None))
        self.rounds_done = max(self.rounds_done, finished)


def state_json(
    state: WorkingState,
    ledger: KeyFactLedger,
    *,
    facts: int | None = None,
    max_tokens: int | None = None,
) -> str:
    """The state, with the ledger (its first `facts` facts, under the `max_tokens` cap)
    merged in, as compact JSON."""
    data = state.model_dump(mode="json", exclude_defaults=True)
    data["kind"] = state.kind
    ledger.merge_into(data, limit=facts, max_tokens=max_tokens)
    return json.dumps(data, ensure_ascii=False)


def _state_lead(text: str) -> Lead:
    lead = Lead()
    lead.builder.add(render_user(f"{STATE_HEADING}\n<{STATE_TAG}>\n{text}\n</{STATE_TAG}>"))
    return lead


class ExtractStateStrategy(LedgerBlockStrategy):
    """Recent N steps whole, everything older folded into a typed state."""

    name = "extract_state"

    def __init__(self, *args: Any, stride: int = 1, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if stride < 1:
            raise UsageError(f"stride must be at least 1 (got {stride})")
        self.stride = stride
        self._folding = _Folding()
        self._rendered: tuple[tuple[int, int, int], Lead] | None = None

    @property
    def state(self) -> WorkingState:
        """The current working state (steps before the recent part folded in)."""
        return self._folding.state

    def _reset(self, conversation: Conversation) -> None:
        state = WorkingState()
        summary = conversation.summary
        if summary is not None:
            try:
                state = WorkingState.model_validate_json(summary.text)
            except ValidationError:
                state = WorkingState(earlier_summary=summary.text)
        self._folding = _Folding(state=state)
        self._rendered = None

    def _advance(self, conversation: Conversation) -> None:
        natural = recent_start(len(conversation.entries), self.budget, self.stride)
        target = self._start_for(conversation, natural)
        if target < self._folding.upto:
            self._reset(conversation)  # a replayed pin earlier than the live fold
        if target > self._folding.upto:
            self._folding.fold(conversation, target)

    def _first_whole(self) -> int:
        return self._folding.upto

    def _lead(self, conversation: Conversation) -> Lead:
        folding = self._folding
        facts = self._facts_shown(conversation)
        key = (folding.upto, folding.rounds_done, facts)
        if self._rendered is None or self._rendered[0] != key:
            empty = folding.state.is_empty and not facts
            text = state_json(
                folding.state,
                conversation.ledger,
                facts=facts,
                max_tokens=self.budget.ledger_max_tokens,
            )
            self._rendered = (key, Lead() if empty else _state_lead(text))
        return self._rendered[1]

    def _body(self, conversation: Conversation, builder: Builder) -> list[Anchor | None]:
        add_rounds_from(builder, conversation, self._folding.upto)
        return []

    async def compact(self, conversation: Conversation, summarize: Summarizer) -> Compaction:
        """Fold all but the recent N steps into the state and forget them (no model call)."""
        entries = conversation.entries
        if not entries:
            raise UsageError("nothing to compact: the conversation holds no step yet")
        self._sync(conversation)
        started = self.clock.now()
        tokens_before = conversation.context_tokens

        def summary_for(kept: int) -> tuple[str | None, Lead]:
            trial = copy.deepcopy(self._folding)
            trial.fold(conversation, len(entries) - kept)
            text = state_json(
                trial.state, conversation.ledger, max_tokens=self.budget.ledger_max_tokens
            )
            return text, _state_lead(text)

        return self.finish_compaction(
            conversation,
            keep=min(self.budget.keep_recent_steps, len(entries) - self._folding.upto),
            summary_for=summary_for,
            prompt=None,
            mode="fallback",
            tokens_before=tokens_before,
            started=started,
            fallback_reason="extract_state carries its extracted state, not a model summary",
            expected_keep=self.budget.keep_recent_steps,
        )
