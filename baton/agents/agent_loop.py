"""`AgentLoop`: the agentic loop over journaled conversations, each with its own context budget.

An actor hosts it (`AgentActor` for Init and Execute, the Scheduler for its task summaries):
the loop uses the host's name and ref, and the host's handlers decide what opens a round.


Per round: compose the payload with the strategy → call the model → run the requested tools
(concurrently, each under its timeout) → append the step → compact when the strategy says so
→ repeat until the model stops asking for tools (or `max_steps`).

Every change to a conversation is journaled before it counts. A model reply is journaled the
moment it arrives, before its tools run, and a compaction summary the moment it is written;
so after a crash the actor rebuilds the conversation, re-runs only the tools of a reply it
already has, and never pays for a completed model call twice.

A turn whose model call fails after the client's own retries (`ModelCallFailure`: the API is
unreachable or overloaded) is not a handler failure: the round waits and calls again on the
setup's `ModelRetry` (see `baton.models.retry`), reporting the wait to the Scheduler.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from datetime import datetime
from typing import Any

import structlog
from pydantic import BaseModel

import baton.agents.records  # noqa: F401 - the events this loop emits, registered with the token log
from baton._log import get_logger
from baton.agents._agent_state import ConversationBook, ConversationState, load_state
from baton.agents._compaction_report import CompactionReports
from baton.agents.agent_setup import AgentSetup, Handoff, RoundOf, ToolHooks
from baton.agents.budget_overrides import apply_overrides
from baton.agents.compaction import Compactor, background_tasks
from baton.agents.errors import UndeliveredFailure
from baton.agents.in_flight import CALLS_IN_FLIGHT
from baton.agents.prompt_files import read_scenario_prompt
from baton.agents.tools import Toolbox, scenario_scope
from baton.agents.tools.load_budget import run_within_budget
from baton.context.edit_requests import cleared_tokens
from baton.context.events import ContextEvent
from baton.context.ledger import KeyFact
from baton.context.ledger_patterns import FactPatterns
from baton.context.payload import Payload
from baton.context.registry import make_strategy
from baton.context.strategy import ContextBudget, ContextStrategy
from baton.context.tokens import estimate_json_tokens
from baton.errors import UsageError
from baton.mailboxes.errors import MailboxClosedError
from baton.models.errors import ContextOverflowError
from baton.models.pricing import PRICES
from baton.models.protocol import (
    CallContext,
    Model,
    ModelResponse,
    Purpose,
    bind_call,
    model_call_fields,
)
from baton.models.retry import until_available
from baton.models.telemetry import NO_TRACE, round_trace
from baton.runtime.actor import Actor
from baton.runtime.errors import ActorDeadError, UnknownActorError

log = get_logger(__name__)

# The conversation whose round the running task drives (the tools' hooks read it).
_round_state: ContextVar[ConversationState | None] = ContextVar("baton_round", default=None)


def _dump(model: BaseModel | None) -> dict[str, Any] | None:
    return None if model is None else model.model_dump(mode="json")


def answered_before(state: ConversationState, key: str | None) -> bool:
    """`key` opened a round older than the latest: that round, and later ones, are done."""
    return key is not None and key in state.round_keys and key != state.round_key


class AgentLoop:
    """One agent's model, tools, budget and conversations (one per scenario, plus `main`)."""

    def __init__(self, setup: AgentSetup, host: Actor) -> None:
        self.setup = setup
        self._host = host
        self.budget = ContextBudget.model_validate(setup.config, from_attributes=True)
        self.book = ConversationBook(
            journal=setup.journal,
            owner=lambda: host.actor_name,
            load=self._load_state,
            passivate_after=setup.config.passivate_after_s,
            dropped=self._dropped,
        )
        self._last: ConversationState | None = None
        self._toolbox = (
            setup.tools(ToolHooks(self._deliver, self._register_paths, setup.storage))
            if setup.tools is not None
            else Toolbox([])
        )
        self.specs = self._toolbox.specs()
        self._patterns = FactPatterns([*setup.fact_patterns, *setup.config.fact_patterns])
        self._compactions = CompactionReports(
            actor=lambda: host.actor_name,
            workspace=setup.workspace,
            token_log=setup.token_log,
            min_gain=setup.config.min_compaction_gain,
            storage=setup.storage,
        )
        self.compactor = Compactor(self, self._compactions)

    def _load_state(
        self, conversation: str, records: Iterable[Mapping[str, Any]]
    ) -> ConversationState:
        """A conversation rebuilt from its journal, its compactions counted again."""
        records = list(records)
        state = load_state(conversation, records, self.new_strategy, self.budget)
        self._compactions.restore(
            conversation,
            (r for r in records if r.get("type") == "compaction"),
            state.budget or self.budget,
        )
        return state

    def _dropped(self, conversation: str) -> None:
        """A passivated conversation's compaction count is read back with it."""
        self._compactions.forget(conversation)
        if self._last is not None and self._last.id == conversation:
            self._last = None

    @property
    def name(self) -> str:
        """The hosting actor's name: the journal's and the log lines' key."""
        return self._host.actor_name

    @property
    def model(self) -> Model:
        """The agent's model."""
        return self.setup.model

    async def journal(self, state: ConversationState, record: dict[str, Any]) -> None:
        """Append `record` to the conversation's journal (a reply's record settles the
        running task's call in flight)."""
        try:
            await self.book.append(state, record)
        finally:
            CALLS_IN_FLIGHT.settled()

    async def start(self) -> list[str]:
        """Fit the budget to the model, report the context fill; the conversations a crash
        left waiting for the model (none when processes share the journal: a dead one's
        round is finished by whoever takes over the message that opened it)."""
        await self._fit_budget_to_model()
        if self.setup.context_reporter is not None:
            self.setup.context_reporter.register(self.name, self.context_fill)
        if self.setup.journal.shared:
            return []
        unfinished = []
        for conversation in await self.setup.journal.conversations(self.name):
            state = await self.state(conversation)
            if state.conversation.awaiting_reply:
                unfinished.append(conversation)
            elif self.book.passivation.after > 0:
                # Idle already: a process restarted over thousands of conversations waiting
                # for their next round does not hold them all (docs/context.md, "Idle
                # conversations").
                self.book.passivate(conversation)
        return unfinished

    async def stop(self) -> None:
        """Stop reporting the context fill and passivating."""
        self.book.close()
        if self.setup.context_reporter is not None:
            self.setup.context_reporter.unregister(self.name, self.context_fill)

    def context_fill(self) -> dict[str, int]:
        """The size of the conversation worked on last, against its window and threshold."""
        state = self._last
        budget = (state.budget if state is not None else None) or self.budget
        tokens = state.conversation.context_tokens if state is not None else 0
        return {
            "context_tokens": tokens,
            "context_window": budget.context_window,
            "compact_threshold": budget.compact_threshold,
        }

    async def _fit_budget_to_model(self) -> None:
        limits = await self.setup.model.limits()
        if limits.rules is not None:
            self.book.token_ratio = limits.rules.tokenizer_ratio
        window = self.budget.context_window
        if limits.context_window >= window:
            return
        # The effective window is the smaller of config and the model's; keep the threshold at
        # the same share of it.
        share = self.budget.compact_threshold / window
        self.budget = self.budget.model_copy(
            update={
                "context_window": limits.context_window,
                "compact_threshold": int(limits.context_window * share),
            }
        )
        log.warning(
            "agent.window_reduced",
            actor=self.name,
            configured=window,
            model_window=limits.context_window,
            compact_threshold=self.budget.compact_threshold,
        )

    def owning(self, conversation: str) -> AbstractAsyncContextManager[ConversationState]:
        """Hold the conversation, brought up to date (see `ConversationBook.owning`)."""
        return self.book.owning(conversation)

    async def state(self, conversation: str) -> ConversationState:
        """The conversation's state, read from the journal the first time."""
        return await self.book.get(conversation)

    def round_of(self, state: ConversationState, dispatch_id: str | None) -> RoundOf | None:
        """The round of `state`, opened by `dispatch_id`, as its reports name it; None when it
        reports to no one (no `reports` in the setup, or a conversation of no scenario)."""
        if self.setup.reports is None or state.scenario is None:
            return None
        return RoundOf(state.scenario, state.id, self.name, dispatch_id)

    async def report_round_end(self, conversation: str, text: str, dispatch_id: str | None) -> None:
        """A scenario round that ended without a handoff would leave the scenario waiting
        on this agent for ever: tell whoever assigned it, which nudges or fails it."""
        state = await self.state(conversation)
        round_ = self.round_of(state, dispatch_id or state.round_key)
        if state.handed_off or round_ is None or self.setup.reports is None:
            return
        log.warning("agent.round_ended_without_handoff", actor=self.name)
        await self.setup.reports.ended(self._host.actor_ref, round_, text[:2000])

    async def run_round(
        self,
        conversation: str,
        text: str | None,
        *,
        key: str | None = None,
        facts: Sequence[KeyFact] = (),
    ) -> str:
        """Run a round opened by `text` (None: finish the open one). A `key` already seen is
        the same request again: its round is finished, or its answer given, not re-run.
        `facts` (a work order's ids, its package's paths) join the ledger as the round opens,
        with the ids the patterns find in `text`."""
        async with self.owning(conversation) as state:
            return await self._round(state, text, key=key, facts=facts)

    async def _round(
        self,
        state: ConversationState,
        text: str | None,
        *,
        key: str | None,
        facts: Sequence[KeyFact] = (),
    ) -> str:
        conversation = state.id
        scenario = state.scenario
        with (
            structlog.contextvars.bound_contextvars(scenario=scenario, conversation=conversation),
            scenario_scope(scenario),  # Write writes under this scenario's folder only
        ):
            self._last = state
            # Per task: a keyed agent runs the rounds of several conversations at once, and
            # the tools of each (handoff, paths) must reach their own round's state.
            current = _round_state.set(state)
            state.trace = round_trace(self.name, conversation, scenario)
            try:
                async with background_tasks() as group:
                    # A summary asked for in the background runs in the round; the round
                    # ends once it is answered and journaled.
                    state.background_group = group
                    return await self._open_or_finish(state, text, key=key, facts=facts)
            except BaseException as error:
                state.trace.fail(error)
                raise
            finally:
                CALLS_IN_FLIGHT.settled()  # a reply this task never came to journal
                state.background_group = None
                if state.background is not None and not state.background.answered:
                    state.background = None  # cancelled with a failed round: asked again
                _round_state.reset(current)
                state.trace.end()
                state.trace = NO_TRACE

    async def _open_or_finish(
        self,
        state: ConversationState,
        text: str | None,
        *,
        key: str | None,
        facts: Sequence[KeyFact],
    ) -> str:
        if text is not None and (key is None or key not in state.round_keys):
            if state.conversation.awaiting_reply:
                await self._drive(state)  # an interrupted round finishes first
            await self.book.record(state, state.conversation.start_round(text, key=key))
            await self._register(state, [*facts, *self._patterns.facts([text], source="user")])
            state.loaded_tokens = 0
            state.handed_off = False
            if key is not None:
                state.round_keys.add(key)
                state.round_key = key
        elif text is not None:
            log.info("agent.request_redelivered", actor=self.name, key=key)
            if answered_before(state, key):
                return ""
            # A crash between the round's record and its facts' lost the facts: the ledger
            # journals only the ones it lacks, so registering again is safe.
            await self._register(state, [*facts, *self._patterns.facts([text], source="user")])
        return await self._drive(state)

    async def _drive(self, state: ConversationState) -> str:
        conversation = state.conversation
        last = conversation.last_step
        if last is not None:
            # A crash between a step's record and its facts' lost the facts: the ledger
            # journals only the ones it lacks, so registering again is safe.
            found = self._patterns.facts([r.text for r in last.results], source="tool")
            await self._register(state, found)
        calls = 0
        while conversation.awaiting_reply:
            if calls >= self.setup.config.max_steps:
                log.warning("agent.max_steps", actor=self.name, max_steps=calls)
                break
            response, sent, layout = (
                state.pending_response,
                state.pending_sent,
                state.pending_layout,
            )
            if response is None:
                # Due already when a crash hit between a step and its compaction: compact now,
                # as the uninterrupted run did, before paying for a call on the larger context.
                await self.compactor.precompact_if_due(state)
                await self.compactor.compact_if_due(state)
                response, sent, layout = await self._next_response(state), None, None
            state.pending_response = state.pending_sent = state.pending_layout = None
            state.turn = conversation.next_seq
            results, state.loaded_tokens = await run_within_budget(
                self._toolbox,
                response.tool_uses,
                loaded=state.loaded_tokens,
                budget=self.setup.config.load_budget_tokens,
                observe=state.trace.tool,
            )
            record = conversation.append_step(
                response.content,
                results,
                response.usage,
                stop_reason=response.stop_reason,
                sent_estimate=sent,
                layout=layout,
            )
            await self.book.record(state, record)
            await self._register_written(state, response, results)
            results_text = [r.text for r in record.step.results]
            await self._register(state, self._patterns.facts(results_text, source="tool"))
            calls += 1
            state.strategy.on_turn_complete(conversation)
            await self.compactor.precompact_if_due(state)
            await self.compactor.compact_if_due(state)
        await self.compactor.settle_background(state)
        last = conversation.last_step
        return last.text if last is not None else ""

    async def system_prompt(self, state: ConversationState) -> str:
        """The role's prompt, or the scenario's own (`scenarios/<name>/prompts/<role>.md`)."""
        if state.system_prompt is None:
            workspace, custom = self.setup.workspace, None
            if workspace is not None and state.scenario is not None:
                # A regular file inside the workspace, or a ConfigError (docs/handoffs.md,
                # "Sandbox"); not remembered until it is read, so a refusal is not forgotten.
                custom = await read_scenario_prompt(
                    workspace, self.setup.storage, state.scenario, self.setup.role
                )
            state.system_prompt = custom if custom is not None else self.setup.system_prompt
        return state.system_prompt

    async def _next_response(self, state: ConversationState) -> ModelResponse:
        conversation = state.conversation
        turn = conversation.next_seq
        system = await self.system_prompt(state)
        payload = state.strategy.compose_payload(system, self.specs, conversation)
        try:
            response = await self._turn_call(state, payload, turn=turn)
        except ContextOverflowError as overflow:
            log.warning("agent.context_overflow", actor=self.name, error=str(overflow))
            await self.compactor.compact(state)
            payload = state.strategy.compose_payload(system, self.specs, conversation)
            response = await self._turn_call(state, payload, turn=turn)
        while response.compaction is not None:
            response = await self._after_server_compaction(state, system, response, turn=turn)
        cleared = cleared_tokens(response.context_management)
        if cleared and conversation.account.sent_estimate is not None:
            # Calibrate against what the server counted once it cleared older results
            # (docs/context.md, "Server-side context management").
            raw = conversation.account.calibration.unapply(cleared)
            conversation.account.note_sent(max(1, conversation.account.sent_estimate - raw))
        await self.journal(
            state,
            {
                "type": "response",
                "turn": turn,
                "response": response.model_dump(mode="json"),
                "sent_estimate": conversation.account.sent_estimate,
                "layout": _dump(conversation.composed_layout),
            },
        )
        self.log_call(state, response, turn=turn, purpose=self.setup.purpose)
        return response

    async def _after_server_compaction(
        self, state: ConversationState, system: str, response: ModelResponse, *, turn: int
    ) -> ModelResponse:
        """The turn's reply once the server's compaction `response` carries is applied: asked
        for again after a pause (`stop_reason: "compaction"`), else the rest of `response`.
        A block without a summary is compacted over by baton itself."""
        if not await self.compactor.server_compacted(state, response, turn=turn):
            await self.compactor.compact(state)
        if response.stop_reason != "compaction":
            rest = [block for block in response.content if block["type"] != "compaction"]
            return response.model_copy(update={"content": rest})
        payload = state.strategy.compose_payload(system, self.specs, state.conversation)
        return await self._turn_call(state, payload, turn=turn)

    async def _turn_call(
        self, state: ConversationState, payload: Payload, *, turn: int
    ) -> ModelResponse:
        """The turn's reply, waiting out an unavailable model (docs: `model_retry`)."""

        async def call() -> ModelResponse:
            return await self.call(state, payload, turn=turn, purpose=self.setup.purpose)

        async def waiting(reason: str | None, retry_at: datetime | None) -> None:
            await self._report_waiting(state, reason, retry_at)

        return await until_available(
            call, self.setup.model_retry, actor=self.name, on_waiting=waiting
        )

    async def _report_waiting(
        self, state: ConversationState, reason: str | None, retry_at: datetime | None
    ) -> None:
        """Tell whoever assigned this scenario round that it waits for the model (or no
        longer)."""
        round_ = self.round_of(state, state.round_key)
        if round_ is None or self.setup.reports is None:
            return
        await self.setup.reports.waiting(self._host.actor_ref, round_, reason, retry_at)

    async def call(
        self, state: ConversationState, payload: Payload, *, turn: int, purpose: Purpose
    ) -> ModelResponse:
        context = CallContext(
            actor=self.name,
            conversation=state.id,
            scenario=state.scenario,
            turn=turn,
            purpose=purpose,
        )
        spend = self.setup.spend
        if spend is not None and self.round_of(state, state.round_key) is not None:
            # A scenario round stops before a call its run can no longer pay for; the
            # Scheduler's task summaries are not stopped here: the agent's next call is.
            await spend.check(state.id)
        model = payload.get("model") or self.setup.model.name
        # Counted until its reply is journaled (`journal`), or it fails: a stopping process
        # waits for it rather than pay for it again (`baton.agents.in_flight`).
        CALLS_IN_FLIGHT.sent()
        try:
            with bind_call(context), state.trace.chat(model, purpose=purpose, turn=turn) as chat:
                started = time.monotonic()
                response = await self.setup.model.create(payload)
                self.compactor.pace.timed(purpose, time.monotonic() - started)
                chat.record(response)
                return response
        except BaseException:
            CALLS_IN_FLIGHT.settled()
            raise

    def log_call(
        self, state: ConversationState, response: ModelResponse, *, turn: int, purpose: Purpose
    ) -> None:
        """The `model.call` line, written once the reply is journaled: after a crash, a call
        with a line is never made again."""
        budget = state.budget or self.budget
        spend = self.setup.spend
        prices = spend.prices if spend is not None else PRICES
        fields = model_call_fields(response, budget, turn=turn, purpose=purpose, prices=prices)
        if spend is not None:
            spend.add(state.id, fields["cost_usd"])
        self.setup.token_log.emit("model.call", **fields)

    async def set_budget(self, conversation: str, overrides: Mapping[str, Any]) -> None:
        """Give one conversation its own budget (a scenario's overrides), journaled; overrides
        that do not make a valid budget with this agent's are a `ConfigError` (the sender's
        to fix: nothing is journaled and no round starts)."""
        state = await self.state(conversation)
        budget = apply_overrides(
            self.budget,
            overrides,
            source=f"the work order to {self.name} (its scenario's [actors.{self.name}])",
            where=("budget",),
        )
        if budget == (state.budget or self.budget):
            return
        await self.book.append(state, {"type": "budget", "overrides": dict(overrides)})
        state.budget = budget
        state.strategy = self.new_strategy(budget)

    def new_strategy(self, budget: ContextBudget | None = None) -> ContextStrategy:
        options: dict[str, Any] = {
            "summary_schema": self.setup.summary_schema,
            "on_event": self._on_context_event,
            **self.setup.config.strategy_options,
            **self.setup.strategy_options,
        }
        return make_strategy(self.setup.config.strategy, budget or self.budget, **options)

    def _on_context_event(self, event: ContextEvent) -> None:
        if event.event == "context.compacted":
            self._compactions.hold(event)  # logged with its audit file, once written
        elif event.event == "context.warning":
            log.warning(event.event, actor=self.name, **event.log_fields())
        else:
            self.setup.token_log.emit(event.event, **event.log_fields())

    async def _register_paths(self, paths: list[str]) -> None:
        state = _round_state.get()
        if state is None:
            return
        record = state.conversation.register_paths(paths, source=self.name)
        if record is not None:
            await self.book.record(state, record)

    async def _register(self, state: ConversationState, facts: Iterable[KeyFact]) -> None:
        """Journal the facts new to the ledger (docs/context.md, "Key-fact ledger")."""
        record = state.conversation.register_facts(facts)
        if record is not None:
            await self.book.record(state, record)

    async def _register_written(
        self, state: ConversationState, response: ModelResponse, results: list[Any]
    ) -> None:
        failed = {r["tool_use_id"] for r in results if r.get("is_error")}
        written = [
            str(use["input"]["path"])
            for use in response.tool_uses
            if use["name"] == "Write" and use["id"] not in failed and "path" in use["input"]
        ]
        if written:
            await self._register_paths(written)

    async def _deliver(self, package: Handoff) -> None:
        state = _round_state.get()
        assert state is not None, "handoff tools only run inside a round"
        reports = self.setup.reports
        if reports is None:
            raise UndeliveredFailure(
                f"the {package.handoff_type} package",
                UsageError(f"{self.name}'s rounds report to no one"),
            )
        # A conversation of no scenario (`main`) hands off under its own name.
        round_ = RoundOf(state.scenario or state.id, state.id, self.name, state.round_key)
        # Stable across a crash and re-run of the same step, so the receiver can dedupe it;
        # named after the request that opened the round (the Scheduler's dispatch id, unique
        # per work order), so a journal lost or replaced cannot make a new handoff repeat an
        # old one's id (docs/handoffs.md, "Delivery and the Scheduler").
        round_key = state.round_key or "-"
        handoff_id = f"{self.name}:{state.id}:{round_key}:{state.turn}:{package.handoff_type}"
        # The handoff tool registered the paths it checked; the ids the package names too.
        await self._register(state, reports.facts(package))
        sent = {
            "handoff_type": package.handoff_type,
            "from": self.name,
            "to": reports.target,
            "package_tokens": estimate_json_tokens(package.model_dump(mode="json")),
        }
        # Before the delivery: the receiver's `handoff.received` (and the phase it moves the
        # scenario to) must never reach a reader of the token log ahead of it.
        self.setup.token_log.emit("handoff.sent", **sent)
        try:
            await reports.handed_off(self._host.actor_ref, round_, handoff_id, package)
        except (ActorDeadError, MailboxClosedError, UnknownActorError) as error:
            # Journaled as the tool's answer, "no such actor" would become the model's
            # mistake for good; failing the round retries it from the journaled reply, and
            # the handoff id lets the receiver take it once (docs/handoffs.md).
            raise UndeliveredFailure(f"the {package.handoff_type} package", error) from error
        state.handed_off = True
        await self.book.append(state, {"type": "handoff", "handoff_id": handoff_id})
        state.trace.handed_off(sent)
