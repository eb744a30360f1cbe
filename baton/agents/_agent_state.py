"""An agent's conversations: each one's state, rebuilt from its journal, and the book that
keeps them, reads them once, writes every change to the journal first and lets idle ones go
(docs/context.md, "Idle conversations")."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from anyio.abc import TaskGroup
from pydantic import ValidationError

from baton._log import get_logger
from baton.agents._passivation import Passivation
from baton.agents.compaction import BackgroundSummary
from baton.agents.errors import JournalRecordError
from baton.agents.journal import JournalStore
from baton.agents.messages import MAIN, scenario_of
from baton.agents.tools.load_budget import loaded_by
from baton.context.conversation import Conversation
from baton.context.records import (
    RECORD_TYPES,
    Compaction,
    FactsRegistered,
    RoundStarted,
    StepAppended,
    dump_record,
)
from baton.context.steps import StepLayout
from baton.context.strategy import ContextBudget, ContextStrategy
from baton.errors import UsageError, validation_problems
from baton.models.protocol import ModelResponse
from baton.models.telemetry import NO_TRACE, RoundTrace

log = get_logger(__name__)

ConversationRecord = RoundStarted | StepAppended | FactsRegistered | Compaction


@dataclass
class ConversationState:
    """One conversation with its strategy, and what a crash may have left half done.

    `pending_response` is a model reply journaled before its tools finished; `pending_summary`
    a compaction summary journaled before the compaction was. Both are used instead of a new
    model call when the actor resumes.
    """

    id: str
    conversation: Conversation
    strategy: ContextStrategy
    pending_response: ModelResponse | None = None
    pending_sent: int | None = None  # the raw estimate of the payload pending_response answers
    pending_layout: StepLayout | None = None  # and how that payload laid out the history
    pending_summary: str | None = None
    pending_through: int | None = None  # the last step pending_summary's request showed
    compacted_tokens: int = 0  # the context's size after its last compaction
    # A summary asked for in the background (docs/context.md, "Background compaction"): the
    # request in flight or answered, or, resumed after a crash took it, the history it showed.
    background: BackgroundSummary | None = None
    background_group: TaskGroup | None = None  # the open round's, which it runs in
    precompact_snapshot: Conversation | None = None
    turn: int = 0
    budget: ContextBudget | None = None
    loaded_tokens: int = 0
    handed_off: bool = False
    system_prompt: str | None = None
    # Keys of the requests that opened rounds, and the latest one: a request delivered again
    # (after a crash, or re-sent) finishes its round instead of opening a second.
    round_keys: set[str] = field(default_factory=set)
    round_key: str | None = None
    # Records of the journal this state reflects: fewer than the journal holds means another
    # process (a worker sharing the journal) went on with the conversation since.
    journal_length: int = 0
    # The open round's spans (baton.models.telemetry): each round's own, passed down with it.
    trace: RoundTrace = NO_TRACE

    @property
    def scenario(self) -> str | None:
        return None if self.id == MAIN else scenario_of(self.id)


def load_state(
    conversation_id: str,
    records: Iterable[Mapping[str, Any]],
    new_strategy: Callable[[ContextBudget | None], ContextStrategy],
    base_budget: ContextBudget,
) -> ConversationState:
    """Replay a journal: conversation records rebuild the conversation; the actor's own
    `response` / `summary` records are kept only while nothing has superseded them, a
    `budget` record gives the conversation its own budget, and a `handoff` record marks the
    current round as handed off."""
    conversation = Conversation(id=conversation_id)
    # A reply's record, validated only if no step supersedes it: every step of the journal
    # follows its reply's record, and checking each reply would double the rebuild's work.
    pending: tuple[int, Mapping[str, Any]] | None = None
    pending_summary: str | None = None
    pending_through: int | None = None
    precompaction: tuple[int, int] | None = None  # (records before it, compaction number)
    compacted_tokens = 0
    budget: ContextBudget | None = None
    handed_off = False
    round_keys: set[str] = set()
    round_key: str | None = None
    length = 0
    records = list(records)
    try:
        for length, record in enumerate(records, start=1):
            kind = record.get("type")
            if kind in RECORD_TYPES:
                conversation.apply(record)
                if kind == "round":
                    handed_off = False
                    round_key = record.get("key")
                    if round_key is not None:
                        round_keys.add(round_key)
                if kind == "step":
                    pending = None
                elif kind == "compaction":
                    pending_summary = pending_through = precompaction = None
                    compacted_tokens = int(record.get("tokens_after", 0))
            elif kind == "response" and record.get("turn") == conversation.next_seq:
                pending = (length, record)
            elif kind == "summary" and record.get("compaction") == conversation.compactions:
                pending_summary = str(record["text"])
                through = record.get("through_seq")
                pending_through = through if isinstance(through, int) else None
            elif kind == "precompaction" and record.get("compaction") == conversation.compactions:
                precompaction = (length - 1, conversation.compactions)
            elif kind == "handoff":
                handed_off = True
            elif kind == "budget":
                budget = ContextBudget.model_validate(
                    {**base_budget.model_dump(), **record["overrides"]}
                )
        if pending is not None:
            length = pending[0]
        pending_response, pending_sent, pending_layout = _pending_reply(pending)
    except (UsageError, ValueError, KeyError, TypeError) as exc:
        # The line that does not follow from those before it (say, one was removed): the
        # book reports it with the journal's name (README.md, "After a full disk or a
        # damaged file").
        raise JournalRecordError(length, _misfit(records[length - 1], exc)) from None
    snapshot = None
    if precompaction is not None and pending_summary is None:
        # Asked for in the background, unanswered when the process stopped: the resumed
        # agent asks again about the history that request showed, so the compaction keeps
        # what the uninterrupted run kept.
        shown = records[: precompaction[0]]
        snapshot = Conversation.replay(
            (r for r in shown if r.get("type") in RECORD_TYPES), conversation_id
        )
    return ConversationState(
        id=conversation_id,
        conversation=conversation,
        strategy=new_strategy(budget),
        budget=budget,
        pending_response=pending_response,
        pending_sent=pending_sent,
        pending_layout=pending_layout,
        pending_summary=pending_summary,
        pending_through=pending_through,
        compacted_tokens=compacted_tokens,
        precompact_snapshot=snapshot,
        turn=conversation.next_seq,
        handed_off=handed_off,
        round_keys=round_keys,
        round_key=round_key,
        journal_length=len(records),
        loaded_tokens=_loaded_in_open_round(records),
    )


def _loaded_in_open_round(records: Sequence[Mapping[str, Any]]) -> int:
    """The tokens the open round's reads loaded: its load budget goes on where the stopped
    process left it (docs/handoffs.md, "Loading on demand")."""
    loaded = 0
    for record in reversed(records):
        kind = record.get("type")
        if kind == "round":
            break
        if kind == "step":
            step = record["step"]
            loaded += loaded_by(step.get("content", ()), step.get("results", ()))
    return loaded


def _pending_reply(
    pending: tuple[int, Mapping[str, Any]] | None,
) -> tuple[ModelResponse | None, int | None, StepLayout | None]:
    """The reply a journal ends with, before its tools finished: the response, the raw
    estimate of the payload it answers, and that payload's layout."""
    if pending is None:
        return None, None, None
    record = pending[1]
    layout = record.get("layout")
    return (
        ModelResponse.model_validate(record["response"]),
        record.get("sent_estimate"),
        None if layout is None else StepLayout.model_validate(layout),
    )


def _misfit(record: Mapping[str, Any], error: Exception) -> str:
    """What is wrong with a journal record that did not replay, in one line."""
    kind = record.get("type")
    if isinstance(error, ValidationError):
        return f"a {kind!r} record with " + "; ".join(validation_problems(error)[:3])
    if isinstance(error, KeyError):
        return f"a {kind!r} record without its {error.args[0]!r} field"
    return str(error) if isinstance(error, UsageError) else f"a {kind!r} record: {error}"


def passivatable(state: ConversationState) -> bool:
    """Whether the journal alone rebuilds `state`: true unless a summary asked for in the
    background came back without one (the live state keeps why, to fall back on it; a
    state read back would ask again)."""
    job = state.background
    return job is None or (job.answered and job.text is not None)


class ConversationBook:
    """The conversations an agent works on, cached, each read from its journal once, and
    dropped again once idle for `passivate_after` seconds (0: never).

    `owner()` names the journal (the hosting actor's name, known once it is spawned); `load`
    rebuilds a state from its records; `dropped` is told of each conversation passivated.
    Every change goes through `append` or `record`.
    """

    def __init__(
        self,
        *,
        journal: JournalStore,
        owner: Callable[[], str],
        load: Callable[[str, list[dict[str, Any]]], ConversationState],
        passivate_after: float = 0.0,
        dropped: Callable[[str], None] = lambda conversation: None,
    ) -> None:
        self.journal = journal
        self._owner = owner
        self._load = load
        self._dropped = dropped
        self._states: dict[str, ConversationState] = {}
        self.passivation = Passivation(passivate_after, self.passivate, owner=owner)
        # Estimator tokens → the model's tokens, before a conversation's first exact figure.
        self.token_ratio = 1.0

    def cached(self, conversation: str) -> bool:
        """Whether the conversation's state is in memory."""
        return conversation in self._states

    def passivate(self, conversation: str) -> bool:
        """Drop the conversation's state from memory (its journal has all of it), unless it
        holds what the journal does not (`passivatable`); whether it is gone."""
        state = self._states.get(conversation)
        if state is not None:
            if not passivatable(state):
                return False
            del self._states[conversation]
            self._dropped(conversation)
        self.passivation.forget(conversation)
        return True

    def close(self) -> None:
        """Stop the passivation timer."""
        self.passivation.close()

    async def get(self, conversation: str) -> ConversationState:
        """The conversation's state, read from the journal the first time (or the first
        time since it was passivated)."""
        state = self._states.get(conversation)
        if state is None:
            owner = self._owner()
            records = await self.journal.read(owner, conversation)
            try:
                state = self._load(conversation, records)
            except JournalRecordError as exc:
                raise self.journal.damaged(owner, conversation, exc.line, exc.problem) from None
            calibration = state.conversation.account.calibration
            if calibration.samples == 0:
                calibration.ratio = self.token_ratio
            self._states[conversation] = state
        self.passivation.touched(conversation)
        return state

    @asynccontextmanager
    async def owning(self, conversation: str) -> AsyncIterator[ConversationState]:
        """Hold the conversation (other processes sharing the journal wait), brought up to
        date with what they journaled; holding it again inside nests. It is not passivated
        while held; those idle long enough are, as it is taken."""
        self.passivation.held(conversation)
        try:
            self.passivation.sweep()
            async with self._owned(conversation) as state:
                yield state
        finally:
            self.passivation.released(conversation, cached=conversation in self._states)

    @asynccontextmanager
    async def _owned(self, conversation: str) -> AsyncIterator[ConversationState]:
        journal, owner = self.journal, self._owner()
        async with journal.hold(owner, conversation):
            cached = conversation in self._states  # one just read from the journal is current
            state = await self.get(conversation)
            if journal.shared and cached:
                length = await journal.length(owner, conversation)
                if length != state.journal_length:
                    log.info(
                        "agent.journal_refreshed",
                        actor=owner,
                        conversation=conversation,
                        records=length,
                        cached=state.journal_length,
                    )
                    del self._states[conversation]
                    state = await self.get(conversation)
            yield state

    async def record(self, state: ConversationState, record: ConversationRecord) -> None:
        """Journal a change of the conversation (a record it returned)."""
        await self.append(state, dump_record(record))

    async def append(self, state: ConversationState, record: Mapping[str, Any]) -> None:
        """Journal one record of the conversation; it counts once it is durable. A record that
        could not be journaled may already be in the cached state, which is dropped: the
        instance may go on (a round refused for a file that may not grow), and the next
        round must start from what the journal holds."""
        try:
            await self.journal.append(self._owner(), state.id, record)
        except BaseException:
            self._states.pop(state.id, None)
            self.passivation.forget(state.id)
            raise
        state.journal_length += 1
