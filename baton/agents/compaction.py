"""An agent's compactions, decided in one place (docs/context.md, "Compaction" and
"Background compaction").

When: the strategy says the context is past its threshold (`should_compact`), the
ineffective-compaction guard has not stopped the conversation compacting
(`_compaction_report`), and no summary asked for in the background is still being written
while the context is below the hard limit (halfway from the threshold to what the window
leaves for an answer): there the agent works on instead of waiting for it. How: past
`precompact_at` of the way to the threshold the summary is asked for in the background,
journaled when it arrives; at the threshold the compaction uses it, or asks for one and
waits; the compaction is journaled and its audit written. A strip batch due soon enough to
keep the context under the threshold stands in for both: no summary is asked for, and the
agent goes on. A resumed agent finds every piece in its journal and pays for no summary
twice.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from anyio.abc import TaskGroup

from baton._log import get_logger
from baton.agents._compaction_report import CompactionReports
from baton.agents.errors import CompactionIneffectiveError
from baton.context.conversation import Conversation
from baton.context.payload import Payload, ToolSpec
from baton.context.records import dump_record
from baton.context.server import ServerStrategy
from baton.context.strategy import ContextBudget, ContextStrategy
from baton.context.summarize import ReadySummary, SummarizeStrategy
from baton.models.protocol import Model, ModelResponse, Purpose

if TYPE_CHECKING:
    from baton.agents._agent_state import ConversationState

log = get_logger(__name__)


@dataclass
class BackgroundSummary:
    """One request for the summary of compaction number `compaction`, made when the history
    ended at step `through_seq`; `done` once it was answered (`text`, or None and why not:
    `reason`) or cancelled."""

    compaction: int
    through_seq: int
    turn: int  # the `turn` of its model call: the conversation's next step then
    started: float  # on the strategy's clock
    done: anyio.Event = field(default_factory=anyio.Event)
    answered: bool = False  # False once done: cancelled with its round, never answered
    text: str | None = None
    reason: str = ""


@asynccontextmanager
async def background_tasks() -> AsyncIterator[TaskGroup]:
    """A task group for the block whose own error comes out as itself, not wrapped in an
    exception group: the round's callers tell its failures apart by type."""
    try:
        async with anyio.create_task_group() as group:
            yield group
    except BaseExceptionGroup as grouped:
        if len(grouped.exceptions) == 1:
            raise grouped.exceptions[0] from None
        raise


ASK_LOOKAHEAD = 2
"""How many steps ahead a strip batch may fall due and still stand in for a summary asked
for in the background, at the least: the step that would cross the threshold, and the one
after. While a summary is written the agent goes on, so the look reaches as many steps as a
summary takes turns to write (`CallPace`), up to `MAX_ASK_LOOKAHEAD`."""
MAX_ASK_LOOKAHEAD = 8
SUMMARY_TURNS_PRIOR = 4.0
"""How many turns a summary is taken to last until one was timed: it writes a few thousand
tokens where a turn writes a few hundred."""
GO_ON_LOOKAHEAD = 1
"""Past the threshold, below the hard limit, a strip batch due once one more step has aged
out of the newest N lets the agent go on instead of compacting."""


def precompact_tokens(budget: ContextBudget, compacted_tokens: int) -> float:
    """The context size past which the summary is asked for: `precompact_at` of the way from
    where the last compaction left the context (nothing, before the first) to the threshold,
    so a compaction that lands near the threshold is not followed by a request at once."""
    base = min(compacted_tokens, budget.compact_threshold)
    return base + budget.precompact_at * (budget.compact_threshold - base)


def hard_limit(budget: ContextBudget) -> int:
    """How far past the threshold an agent goes on while its summary is being written:
    halfway from the threshold to the window less the room for an answer; there it waits."""
    room = budget.context_window - budget.max_output_tokens - budget.compact_threshold
    return budget.compact_threshold + max(0, room) // 2


class CallPace:
    """How long an agent's turn calls and summary calls take, smoothed, in seconds: how many
    steps the agent works on while a summary asked for in the background is written."""

    SMOOTHING = 0.3

    def __init__(self) -> None:
        self.turn_s: float | None = None
        self.summary_s: float | None = None

    def timed(self, purpose: str, seconds: float) -> None:
        """Fold in one call of `purpose` that took `seconds`."""
        name = "summary_s" if purpose == "compaction" else "turn_s"
        seen: float | None = getattr(self, name)
        setattr(self, name, seconds if seen is None else seen + self.SMOOTHING * (seconds - seen))

    def lookahead(self) -> int:
        """The steps a summary asked for now is expected to take."""
        if not self.turn_s:
            return ASK_LOOKAHEAD
        turns = SUMMARY_TURNS_PRIOR if self.summary_s is None else self.summary_s / self.turn_s
        return max(ASK_LOOKAHEAD, min(MAX_ASK_LOOKAHEAD, math.ceil(turns)))


class CompactionHost(Protocol):
    """What compacting needs of the agent it runs in (`AgentLoop` is one)."""

    @property
    def name(self) -> str:
        """The agent's name, for log lines."""
        ...

    @property
    def budget(self) -> ContextBudget:
        """The agent's own budget (a conversation may have its own)."""
        ...

    @property
    def model(self) -> Model:
        """The agent's model."""
        ...

    @property
    def specs(self) -> list[ToolSpec]:
        """The agent's tools, as requests show them (part of the cached prefix)."""
        ...

    async def system_prompt(self, state: ConversationState) -> str:
        """The conversation's system prompt."""
        ...

    async def journal(self, state: ConversationState, record: dict[str, Any]) -> None:
        """Append `record` to the conversation's journal."""
        ...

    async def call(
        self, state: ConversationState, payload: Payload, *, turn: int, purpose: Purpose
    ) -> ModelResponse:
        """One model call of the conversation."""
        ...

    def log_call(
        self, state: ConversationState, response: ModelResponse, *, turn: int, purpose: Purpose
    ) -> None:
        """Its `model.call` line, once the reply is journaled."""
        ...

    def new_strategy(self, budget: ContextBudget | None = None) -> ContextStrategy:
        """A fresh strategy of the agent's kind, for `budget`."""
        ...


class Compactor:
    """One agent's compactions, for each of its conversations."""

    def __init__(self, host: CompactionHost, reports: CompactionReports) -> None:
        self._host = host
        self.reports = reports
        self.pace = CallPace()

    def may_compact(self, conversation: Conversation, budget: ContextBudget) -> bool:
        """False once compacting stopped helping; `CompactionIneffectiveError` when, on top
        of that, the next turn could overflow the window."""
        weak = self.reports.stopped(conversation)
        if weak is None:
            return True
        tokens = conversation.context_tokens
        if tokens + budget.max_output_tokens >= budget.context_window:
            raise CompactionIneffectiveError(
                self._host.name, tokens, budget.context_window, weak, self.reports.floor(budget)
            )
        return False

    async def compact_if_due(self, state: ConversationState) -> None:
        budget = state.budget or self._host.budget
        if not (
            state.strategy.should_compact(state.conversation, budget)
            and self.may_compact(state.conversation, budget)
        ):
            return
        if self._strip_suffices(
            state, budget, within=GO_ON_LOOKAHEAD, under=budget.compact_threshold
        ):
            return
        if await self._goes_on(state, budget):
            return
        await self.compact(state)

    def _ask_lookahead(self) -> int:
        """How far a strip batch may lie ahead and stand in for a summary asked for now: as
        many steps as a summary takes; offline, where the model answers at once, the fixed
        least, so an offline run asks at the same steps every time (a timing would not)."""
        if getattr(self._host.model, "answers_at_once", False):
            return ASK_LOOKAHEAD
        return self.pace.lookahead()

    async def settle_background(self, state: ConversationState) -> None:
        """At a round's end, a compaction the agent went on past while its summary was being
        written is made now: the round waits for that summary anyway, and unused it would
        have been paid for nothing (docs/context.md, "Background compaction")."""
        budget = state.budget or self._host.budget
        if (
            state.background is not None
            and state.strategy.should_compact(state.conversation, budget)
            and self.may_compact(state.conversation, budget)
        ):
            await self.compact(state)

    def _strip_suffices(
        self, state: ConversationState, budget: ContextBudget, *, within: int, under: float
    ) -> bool:
        """Whether a strip batch due by the request after `within` more steps brings the
        context back under `under` (docs/context.md, "Background compaction"): then no
        summary is needed for it, and none is paid for. A look ahead holds only below the
        hard limit; there only the very next request's strip counts."""
        strategy, conversation = state.strategy, state.conversation
        if not isinstance(strategy, SummarizeStrategy) or (
            strategy.stride == 1 and strategy.strip_batch_tokens is None
        ):
            # Stripping every turn is no batch: the context measured stays one aged-out
            # step above what is sent, every turn alike, and the threshold is set against it.
            return False
        tokens = conversation.context_tokens
        if tokens >= hard_limit(budget):
            within = 0
        # Each step looked ahead is taken to add what the newest ones did on average.
        recent = conversation.entries[-budget.keep_recent_steps :]
        growth = conversation.account.calibration.apply(
            sum(e.whole_tokens for e in recent) // max(1, len(recent))
        )
        for ahead in range(within + 1):
            relief = strategy.strip_relief(conversation, within=ahead)
            if relief > 0 and tokens + ahead * growth - relief <= under:
                return True
        return False

    async def _goes_on(self, state: ConversationState, budget: ContextBudget) -> bool:
        """Past the threshold, whether the agent works on instead of compacting now: its
        summary, asked for in the background, is still being written (or was asked for
        again, its first no longer fitting), and the context is below the hard limit
        (docs/context.md, "Background compaction")."""
        strategy, conversation = state.strategy, state.conversation
        if (
            not isinstance(strategy, SummarizeStrategy)
            or isinstance(strategy, ServerStrategy)
            or getattr(self._host.model, "answers_at_once", False)
        ):
            return False
        if conversation.context_tokens >= hard_limit(budget):
            return False
        job = state.background
        if job is not None and not job.done.is_set():
            return True
        ready = await self._ready_summary(state, strategy)
        if ready is None or strategy.fits(conversation, ready):
            return False
        # Answered, but too far behind to be used: asked for again, in the background.
        log.info("agent.summary_refreshed", actor=self._host.name, through_seq=ready.through_seq)
        state.background = None
        state.pending_summary = state.pending_through = None
        await self.precompact_if_due(state)
        return state.background is not None

    async def compact(self, state: ConversationState) -> None:
        conversation = state.conversation
        turn = conversation.next_seq
        through = conversation.entries[-1].step.seq if conversation.entries else -1

        async def summarize(payload: Payload) -> str:
            # Answered before a crash, to this very request: not paid for twice. One that
            # answered an earlier request (a background summary this compaction refused:
            # it no longer fits) does not answer this one.
            if state.pending_summary is not None and state.pending_through in (None, through):
                return state.pending_summary
            return await self._summary_call(state, payload, turn=turn, through_seq=through)

        before = [entry.step for entry in conversation.entries]
        strategy = state.strategy
        strategy.use_prefix(await self._host.system_prompt(state), self._host.specs)
        if isinstance(strategy, SummarizeStrategy):
            ready = await self._ready_summary(state, strategy)
            compaction = await strategy.compact(conversation, summarize, ready=ready)
        else:
            compaction = await strategy.compact(conversation, summarize)
        state.pending_summary = state.pending_through = state.background = None
        state.precompact_snapshot = None
        state.compacted_tokens = compaction.tokens_after
        await self._host.journal(state, dump_record(compaction))
        event = await self.reports.compacted(
            state.conversation, compaction, before, state.budget or self._host.budget
        )
        state.trace.compacted(event)

    async def server_compacted(
        self, state: ConversationState, response: ModelResponse, *, turn: int
    ) -> bool:
        """Apply the server's compaction block `response` carries (docs/context.md,
        "Server-side context management"): journaled before the call's `model.call` line,
        so a resumed agent starts from the block and never pays for it again; audited and
        logged as baton's own compactions are. False when it holds no summary."""
        strategy, conversation = state.strategy, state.conversation
        block = response.compaction
        if block is None or not isinstance(strategy, ServerStrategy):
            return False
        before = [entry.step for entry in conversation.entries]
        strategy.use_prefix(await self._host.system_prompt(state), self._host.specs)
        started = strategy.clock.now() - response.latency_ms / 1000
        compaction = strategy.server_compacted(conversation, block, response.usage, started=started)
        if compaction is None:
            log.warning("agent.server_compaction_empty", actor=self._host.name)
            return False
        state.pending_summary = state.pending_through = state.background = None
        state.precompact_snapshot = None
        state.compacted_tokens = compaction.tokens_after
        await self._host.journal(state, dump_record(compaction))
        if response.stop_reason == "compaction":
            # The call did nothing else: its line is the compaction's. A reply that went on
            # after the block is logged as the turn it also is.
            self._host.log_call(state, response, turn=turn, purpose="compaction")
        event = await self.reports.compacted(
            conversation, compaction, before, state.budget or self._host.budget
        )
        state.trace.compacted(event)
        return True

    async def _summary_call(
        self, state: ConversationState, payload: Payload, *, turn: int, through_seq: int
    ) -> str:
        """Ask for a compaction's summary; journaled (with the last step its request showed)
        before its `model.call` line, so a resumed agent never pays for it twice."""
        compaction = state.conversation.compactions
        response = await self._host.call(state, payload, turn=turn, purpose="compaction")
        await self._host.journal(
            state,
            {
                "type": "summary",
                "compaction": compaction,
                "through_seq": through_seq,
                "text": response.text,
            },
        )
        self._host.log_call(state, response, turn=turn, purpose="compaction")
        return response.text

    async def precompact_if_due(self, state: ConversationState) -> None:
        """Past `precompact_at` of the threshold, ask for the summary in the background; the
        compaction at the threshold uses it (docs/context.md, "Background compaction")."""
        strategy, conversation = state.strategy, state.conversation
        budget = state.budget or self._host.budget
        group = state.background_group
        if (
            group is None
            or not isinstance(strategy, SummarizeStrategy)
            or isinstance(strategy, ServerStrategy)  # the server writes its summaries
            or budget.precompact_at >= 1
            or state.background is not None
            or state.pending_summary is not None
        ):
            return
        system = await self._host.system_prompt(state)
        snapshot = state.precompact_snapshot
        if snapshot is not None:
            # Resumed: the request the stopped process made, about the history it showed.
            state.precompact_snapshot = None
            asker = self._host.new_strategy(state.budget)
            shown = snapshot
        elif (
            conversation.steps_since_compaction < 1
            or not conversation.entries
            or conversation.context_tokens <= precompact_tokens(budget, state.compacted_tokens)
            or not self.reports.compacting(conversation)
            # A batch stripped before the threshold is crossed that keeps the context under
            # it leaves nothing for a summary to do (docs/context.md, "Background
            # compaction").
            or self._strip_suffices(
                state, budget, within=self._ask_lookahead(), under=budget.compact_threshold
            )
        ):
            return
        else:
            asker, shown = strategy, conversation
            await self._host.journal(
                state,
                {
                    "type": "precompaction",
                    "compaction": conversation.compactions,
                    "through_seq": conversation.entries[-1].step.seq,
                },
            )
        assert isinstance(asker, SummarizeStrategy)
        asker.use_prefix(system, self._host.specs)
        payload = asker.summary_request(shown)
        job = BackgroundSummary(
            compaction=conversation.compactions,
            through_seq=shown.entries[-1].step.seq,
            turn=shown.next_seq,
            started=strategy.clock.now(),
        )
        state.background = job
        group.start_soon(self._summarize_in_background, state, strategy, job, payload)

    async def _summarize_in_background(
        self,
        state: ConversationState,
        strategy: SummarizeStrategy,
        job: BackgroundSummary,
        payload: Payload,
    ) -> None:
        async def summarize(request: Payload) -> str:
            return await self._summary_call(
                state, request, turn=job.turn, through_seq=job.through_seq
            )

        try:
            job.text, job.reason = await strategy.call_summarizer(summarize, payload)
            job.answered = True
        finally:
            job.done.set()

    async def _ready_summary(
        self, state: ConversationState, strategy: SummarizeStrategy
    ) -> ReadySummary | None:
        """The summary asked for before this compaction, waited for if still on its way."""
        job = state.background
        if job is not None:
            waiting = strategy.clock.now()
            await job.done.wait()
            waited_ms = max(0.0, (strategy.clock.now() - waiting) * 1000)
            return ReadySummary(
                job.text, job.through_seq, job.started, waited_ms=waited_ms, reason=job.reason
            )
        if state.pending_summary is None:
            return None
        entries = state.conversation.entries
        through = state.pending_through
        if through is None:  # journaled before summaries named their last step
            through = entries[-1].step.seq if entries else -1
        return ReadySummary(state.pending_summary, through, strategy.clock.now())
