"""One conversation of a finished run replayed under a context policy: the same replies and
tool results, the requests the policy would have composed for them, each billed through the
prompt cache at the time the token log says it was sent (docs/context.md, "What a run would
have cost").

The replay walks the conversation's journal as the agent loop walked it live: a round opens,
the policy's strategy composes each turn's request, the journaled reply answers it, its tool
results join the history with the key facts registered after them, and then the agent's own
`Compactor` decides, as it does live, whether to ask for a summary (in the background past
`precompact_at`) and whether to compact. So a policy compacts where it would have, and pays
for its summary calls. A summary is the journaled one where the policy asks for it at the
point the run did (same compaction, same last step), else a stand-in of the same size: the
journaled summary nearest in number, or, with none journaled, the offline model's
deterministic summary of the request.

The replay answers at once, as the offline model does: a policy compacts at its threshold
and never works on past it while a summary is written (docs/context.md, "Background
compaction"). Each conversation gets a prompt cache of its own, on the token log's clock;
for a run on the offline model, whose cache lives in its process, it is emptied where the
log shows another process took over.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from baton.agents._agent_state import ConversationState
from baton.agents._compaction_report import CompactionReports
from baton.agents.compaction import Compactor, background_tasks
from baton.agents.errors import CompactionIneffectiveError
from baton.context.conversation import Conversation
from baton.context.edit_requests import cleared_tokens
from baton.context.payload import Payload, ToolSpec
from baton.context.server_edits import (
    ServerView,
    server_view,
    simulated_compaction,
    uses_server_edits,
    with_cache_split,
)
from baton.context.strategy import ContextBudget, ContextStrategy
from baton.context.tokens import estimate_block_tokens
from baton.context.usage import Usage
from baton.errors import UsageError
from baton.models.protocol import ModelLimits, ModelResponse, Purpose
from baton.pipeline._replay_bill import Biller, Pricing, Tally, Variant, usage_of
from baton.pipeline._replay_calls import CallTimes, JournaledSummaries, LoggedCall, Prefix

MAX_SERVER_COMPACTIONS = 3
"""Server compactions one turn may go through before its reply; past it the replay takes
the reply as it is (a kept part that alone reaches the trigger compacts again and again)."""


@dataclass
class Replayed:
    """A conversation's bill under one policy: per cache lifetime, and what it found."""

    tallies: dict[Variant, Tally]
    lifetimes: set[str] = field(default_factory=set)  # those the composed requests carried
    notes: list[str] = field(default_factory=list)
    unfinished: bool = False  # the journal ends inside a round (still running, or stopped)


class _AtOnce:
    """The replay's model: it answers at once, as the offline model does, so a policy
    compacts at its threshold instead of working on while a summary is written."""

    answers_at_once = True

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    async def create(self, payload: Payload) -> ModelResponse:
        raise UsageError("a replay calls no model: its replies come from the journal")

    async def limits(self) -> ModelLimits:
        return ModelLimits(
            model=self._name, context_window=1_000_000, max_output_tokens=64_000, source="config"
        )


class _NoLog:
    """Token-log events of the replay go nowhere: it is a simulation, not a run."""

    def emit(self, event: str, **fields: Any) -> None:
        del event, fields


@dataclass
class _Reply:
    content: list[dict[str, Any]]
    stop_reason: str | None
    output_tokens: int


class ConversationReplay:
    """Replays one conversation's journal under one policy (the `CompactionHost` its
    `Compactor` works for)."""

    def __init__(
        self,
        actor: str,
        conversation: str,
        *,
        new_strategy: Callable[[ContextBudget], ContextStrategy],
        budget: ContextBudget,
        prefix: Prefix,
        calls: Sequence[LoggedCall],
        pricing: Pricing,
        min_cache_tokens: int,
        min_compaction_gain: float,
        cache_per_process: bool = False,
    ) -> None:
        self._actor = actor
        # The offline model keeps its cache in its process: a run restarted began with none.
        self._cache_per_process = cache_per_process
        self._new_strategy = new_strategy
        self._logged = calls
        self._budget = self._fitted(budget)
        self._prefix = prefix
        self._times = CallTimes(calls)
        self._biller = Biller(
            pricing, clock=lambda: self._times.now, min_cache_tokens=min_cache_tokens
        )
        self._model = _AtOnce(pricing.model)
        self._reply: _Reply | None = None
        self._last_usage: Usage | None = None
        self._summaries = JournaledSummaries([], actor)
        self.result = Replayed(self._biller.tallies)
        reports = CompactionReports(
            actor=lambda: actor, workspace=None, token_log=_NoLog(), min_gain=min_compaction_gain
        )
        self.compactor = Compactor(self, reports)
        self.state = ConversationState(
            id=conversation,
            conversation=Conversation(id=conversation),
            strategy=new_strategy(self._budget),
        )

    # --- what the Compactor asks of its host ----------------------------------------------

    @property
    def name(self) -> str:
        return self._actor

    @property
    def budget(self) -> ContextBudget:
        return self._budget

    @property
    def model(self) -> _AtOnce:
        return self._model

    @property
    def specs(self) -> list[ToolSpec]:
        return self._prefix.tools

    async def system_prompt(self, state: ConversationState) -> str:
        return self._prefix.system

    async def journal(self, state: ConversationState, record: dict[str, Any]) -> None:
        del state, record  # the replay changes no journal

    def log_call(
        self, state: ConversationState, response: ModelResponse, *, turn: int, purpose: Purpose
    ) -> None:
        del state, response, turn, purpose  # billed as it was answered (`call`)

    def new_strategy(self, budget: ContextBudget | None = None) -> ContextStrategy:
        return self._new_strategy(budget or self._budget)

    async def call(
        self, state: ConversationState, payload: Payload, *, turn: int, purpose: Purpose
    ) -> ModelResponse:
        """Bill `payload` and answer it: a turn with the journaled reply, a summary request
        with the journaled summary (or its stand-in). A request that declares server-side
        edits is billed as the server reads it, and answered with the server's compaction
        block alone when its trigger is reached (the edit pauses there)."""
        if self._times.advance(purpose, turn) and self._cache_per_process:
            self._biller.forget()
        self._note_lifetimes(payload)
        summary = purpose == "compaction"
        seen: Mapping[str, Any] = payload
        managed: dict[str, Any] | None = None
        if uses_server_edits(payload):
            view = server_view(payload)
            seen = {**payload, "messages": view.messages}
            managed = {"applied_edits": view.applied_edits}
            if view.compaction_due and not summary:
                number = state.conversation.compactions
                return self._server_compaction(payload, view, seen, managed, (number, turn))
        if summary:
            reply = self._summary_reply(state, payload, turn)
        else:
            assert self._reply is not None, "a turn is billed with its journaled reply"
            reply = self._reply
        usages = {
            variant: usage_of(cached, reply.output_tokens)
            for variant, cached in self._biller.split(seen).items()
        }
        self._biller.bill(usages, summary=summary)
        return ModelResponse(
            content=reply.content,
            stop_reason=reply.stop_reason,
            usage=usages["composed"],
            model=self._model.name,
            latency_ms=0.0,
            context_management=managed,
        )

    def _server_compaction(
        self,
        payload: Payload,
        view: ServerView,
        seen: Mapping[str, Any],
        managed: dict[str, Any],
        at: tuple[int, int],
    ) -> ModelResponse:
        """The server's paused reply: its compaction block alone, the compaction billed as
        its own iteration (its request re-reads the view through the cache). The block is
        the journaled one where the run compacted at the same point (compaction number,
        turn), else the simulation's."""
        simulated, spent = simulated_compaction(payload, view)
        block: Mapping[str, Any] = simulated
        journaled = self._summaries.server_block(*at)
        if journaled is not None:
            block = journaled[0]
            spent = spent.model_copy(update={"compaction_output_tokens": journaled[1]})
        usages = {
            variant: with_cache_split(spent, cached)
            for variant, cached in self._biller.split(seen).items()
        }
        self._biller.bill(usages, summary=True)
        return ModelResponse(
            content=[dict(block)],
            stop_reason="compaction",
            usage=usages["composed"],
            model=self._model.name,
            latency_ms=0.0,
            context_management=managed,
        )

    def _summary_reply(self, state: ConversationState, payload: Payload, turn: int) -> _Reply:
        """The answer to a summary request: the journaled summary and its logged output
        when the run asked the same, else a stand-in, its output estimated."""
        text, journaled = self._summaries.answer(state.conversation.compactions, turn - 1, payload)
        logged = self._times.logged("compaction", turn) if journaled else None
        block = {"type": "text", "text": text}
        output = logged.usage.output_tokens if logged else max(1, estimate_block_tokens(block))
        return _Reply([block], "end_turn", output)

    def _note_lifetimes(self, payload: Payload) -> None:
        """Remember the cache lifetimes the composed request's breakpoints name."""
        items: list[Any] = [*payload.get("tools", []), *payload.get("system", [])]
        for message in payload["messages"]:
            content = message["content"]
            items.extend(content if isinstance(content, list) else ())
        for item in items:
            control = item.get("cache_control") if isinstance(item, Mapping) else None
            if isinstance(control, Mapping):
                self.result.lifetimes.add(str(control.get("ttl", "5m")))

    def _fitted(self, budget: ContextBudget) -> ContextBudget:
        """`budget` with the window and threshold the run's calls were made under: the
        agent fits its window to the model's (docs/models.md, "Budgets")."""
        for call in self._logged:
            window, threshold = call.context_window, call.compact_threshold
            if window and threshold and 0 < threshold < window:
                if (window, threshold) != (budget.context_window, budget.compact_threshold):
                    update = {"context_window": window, "compact_threshold": threshold}
                    return budget.model_copy(update=update)
                break
        return budget

    # --- the walk ---------------------------------------------------------------------------

    async def run(self, records: Sequence[Mapping[str, Any]]) -> Replayed:
        """Replay the journal `records` (in order) and return the bill."""
        self._summaries = JournaledSummaries(records, self._actor)
        rounds: list[list[Mapping[str, Any]]] = [[]]
        for record in records:
            if record.get("type") == "round":
                rounds.append([])
            rounds[-1].append(record)
        for records_of_round in rounds:
            # A summary asked for in the background runs within its round, as live.
            async with background_tasks() as group:
                self.state.background_group = group
                settle = False
                for record in records_of_round:
                    kind = record.get("type")
                    if kind == "facts":
                        self.state.conversation.apply(record)
                        continue
                    if settle:
                        await self._after_step()
                        settle = False
                    settle = await self._take(record)
                if settle:
                    await self._after_step()
            self.state.background_group = None
        own = (self.state.budget or self._budget).compact_threshold
        trigger = self.state.strategy.budget.compact_threshold
        if trigger != own:
            self.result.notes.append(
                f"compacts at {trigger:,} tokens, the least the Messages API takes (the "
                f"agent's threshold is {own:,})"
            )
        self.result.unfinished = self.state.conversation.awaiting_reply
        return self.result

    async def _take(self, record: Mapping[str, Any]) -> bool:
        """Apply one record; True when it was a step (the step's aftermath is due once the
        facts registered after it are in)."""
        kind = record.get("type")
        conversation = self.state.conversation
        if kind == "budget":
            overrides = record.get("overrides") or {}
            self.state.budget = self._fitted(
                ContextBudget.model_validate({**self._budget.model_dump(), **overrides})
            )
            self.state.strategy = self.new_strategy(self.state.budget)
        elif kind == "round":
            conversation.apply(record)
        elif kind == "response" and record.get("turn") == conversation.next_seq:
            if self._reply is None:
                response = record.get("response") or {}
                await self._turn(
                    response.get("content") or [],
                    response.get("stop_reason"),
                    int((response.get("usage") or {}).get("output_tokens") or 0),
                )
        elif kind == "step":
            step = record.get("step") or {}
            if self._reply is None:  # a journal with no reply record before its step
                usage = step.get("usage") or {}
                await self._turn(
                    step.get("content") or [],
                    step.get("stop_reason"),
                    int(usage.get("output_tokens") or 0),
                )
            assert self._last_usage is not None
            conversation.append_step(
                step.get("content") or [],
                step.get("results") or [],
                self._last_usage,
                stop_reason=step.get("stop_reason"),
            )
            self._reply = None
            return True
        return False

    async def _turn(
        self, content: list[dict[str, Any]], stop_reason: str | None, output_tokens: int
    ) -> None:
        """Compose and bill the turn's request, as the agent loop's `_next_response` does:
        through the server's compactions, calibrated for what the server cleared."""
        state = self.state
        conversation = state.conversation
        # Before each turn's call, as before every step: a round's input may be what takes
        # the context past `precompact_at` or the threshold.
        await self._compact_if_due()
        turn = conversation.next_seq
        self._reply = _Reply(content, stop_reason, output_tokens)
        system, tools = self._prefix.system, self.specs
        response = await self.call(
            state,
            state.strategy.compose_payload(system, tools, conversation),
            turn=turn,
            purpose="turn",
        )
        for _ in range(MAX_SERVER_COMPACTIONS):
            if response.compaction is None:
                break
            if not await self.compactor.server_compacted(state, response, turn=turn):
                await self.compactor.compact(state)
            payload = state.strategy.compose_payload(system, tools, conversation)
            response = await self.call(state, payload, turn=turn, purpose="turn")
        cleared = cleared_tokens(response.context_management)
        account = conversation.account
        if cleared and account.sent_estimate is not None:
            raw = account.calibration.unapply(cleared)
            account.note_sent(max(1, account.sent_estimate - raw))
        self._last_usage = response.usage
        # Live, the reply is journaled here (a wait on the disk), and a summary asked for in
        # the background after the last step gets its turn: it is billed after this call.
        job = state.background
        if job is not None:
            await job.done.wait()

    async def _after_step(self) -> None:
        """What the agent loop does once a step and its facts are in: catch up, then the
        compaction checks."""
        self.state.strategy.on_turn_complete(self.state.conversation)
        await self._compact_if_due()

    async def _compact_if_due(self) -> None:
        """Ask for the summary in the background when due, compact when due (the agent
        loop asks both after every step and before every turn's call)."""
        state = self.state
        try:
            await self.compactor.precompact_if_due(state)
            await self.compactor.compact_if_due(state)
        except CompactionIneffectiveError as error:
            note = f"stopped compacting (ineffective) at step {state.conversation.next_seq - 1}"
            if note not in self.result.notes:
                self.result.notes.append(note)
            del error
