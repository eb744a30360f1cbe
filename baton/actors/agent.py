"""`AgentActor`: the agentic loop over a journaled conversation with its own context budget.

Per round: compose the payload with the strategy → call the model → run the requested tools
(concurrently, each under its timeout) → append the step → compact when the strategy says so
→ repeat until the model stops asking for tools (or `max_steps`).

Every change to a conversation is journaled before it counts. A model reply is journaled the
moment it arrives, before its tools run, and a compaction summary the moment it is written;
so after a crash the actor rebuilds the conversation, re-runs only the tools of a reply it
already has, and never pays for a completed model call twice.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import structlog
from pydantic import BaseModel, ConfigDict

from baton.actors._agent_state import ConversationState, load_state
from baton.actors.agent_config import AgentConfig, ContextReporter, TokenSink
from baton.actors.journal import JournalStore
from baton.actors.messages import Dispatch, HandoffDelivered, Prompt, RoundEnded
from baton.actors.model import CallContext, Model, ModelResponse, Purpose, bind_call
from baton.actors.tools import Toolbox
from baton.actors.tools.handoff import Deliver, HandoffTool, RegisterPaths
from baton.context.events import ContextEvent
from baton.context.packages import ContextPackage, parse_package
from baton.context.payload import Payload, ToolResultBlock, ToolUseBlock
from baton.context.records import (
    Compaction,
    FactsRegistered,
    RoundStarted,
    StepAppended,
    dump_record,
)
from baton.context.registry import make_strategy
from baton.context.strategy import ContextBudget, ContextStrategy
from baton.context.summary_format import summary_schema_for
from baton.context.tokens import estimate_json_tokens
from baton.errors import ContextOverflowError
from baton.runtime.actor import Actor, handler

log = structlog.get_logger(__name__)

ConversationRecord = RoundStarted | StepAppended | FactsRegistered | Compaction

MAIN_CONVERSATION = "main"


@dataclass(frozen=True)
class ToolHooks:
    """What an agent's handoff tools call: delivery to the Scheduler and the key-fact ledger."""

    deliver: Deliver
    register_paths: RegisterPaths


@dataclass(frozen=True)
class AgentSetup:
    """Everything an agent actor is made of; `tools` builds its toolbox from the hooks."""

    role: str
    config: AgentConfig
    model: Model
    system_prompt: str
    journal: JournalStore
    token_log: TokenSink
    tools: Callable[[ToolHooks], Toolbox] | None = None
    handoff_to: str = "scheduler"
    purpose: Purpose = "turn"
    workspace: Path | None = None
    context_reporter: ContextReporter | None = None
    strategy_options: Mapping[str, Any] = field(default_factory=dict)


class ResumeRound(BaseModel):
    """Sent by an agent to itself on start for each round a crash left unfinished."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    conversation: str


def render_dispatch(message: Dispatch) -> str:
    """The user turn a dispatch opens: the task context, then the package (paths only)."""
    parts = [message.agent_context.render()]
    if message.package is not None:
        tag = f"{message.package.handoff_type}_context"
        parts.append(f"<{tag}>\n{message.package.model_dump_json(indent=2)}\n</{tag}>")
    return "\n\n".join(part for part in parts if part.strip())


def _dump(model: BaseModel | None) -> dict[str, Any] | None:
    return None if model is None else model.model_dump(mode="json")


def _answered_before(state: ConversationState, key: str | None) -> bool:
    """`key` opened a round older than the latest: that round, and later ones, are done."""
    return key is not None and key in state.round_keys and key != state.round_key


class AgentActor(Actor):
    """An agent: model, tools, conversations (one per scenario, plus `main`), journal."""

    def __init__(self, setup: AgentSetup) -> None:
        self.setup = setup
        self.budget = ContextBudget.model_validate(setup.config, from_attributes=True)
        self._states: dict[str, ConversationState] = {}
        # Estimator tokens → the model's tokens before a conversation's first exact figure.
        self._token_ratio = 1.0
        self._current: ConversationState | None = None
        self._last: ConversationState | None = None
        self._toolbox = (
            setup.tools(ToolHooks(self._deliver, self._register_paths))
            if setup.tools is not None
            else Toolbox([])
        )
        self._specs = self._toolbox.specs()
        self._handoff_tools = self._toolbox.names_of(HandoffTool)

    # --- lifecycle ---------------------------------------------------------------------------

    async def on_start(self) -> None:
        await self._fit_budget_to_model()
        if self.setup.context_reporter is not None:
            self.setup.context_reporter.register(self.actor_name, self.context_fill)
        if self.setup.journal.shared:
            # Processes share the journal: a round left unfinished by a dead one is finished
            # by whoever takes over the message that opened it, not by every process starting.
            return
        for conversation in await self.setup.journal.conversations(self.actor_name):
            state = await self._state(conversation)
            if state.conversation.awaiting_reply:
                log.info("agent.resuming", actor=self.actor_name, conversation=conversation)
                await self.actor_ref.tell(ResumeRound(conversation=conversation))

    async def on_stop(self) -> None:
        if self.setup.context_reporter is not None:
            self.setup.context_reporter.unregister(self.actor_name, self.context_fill)

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
            self._token_ratio = limits.rules.tokenizer_ratio
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
            actor=self.actor_name,
            configured=window,
            model_window=limits.context_window,
            compact_threshold=self.budget.compact_threshold,
        )

    # --- handlers ------------------------------------------------------------------------------

    @handler
    async def prompt(self, message: Prompt) -> str:
        """Run a round of the `main` conversation; the reply is the final assistant text."""
        return await self._run_round(MAIN_CONVERSATION, message.text, key=self._message_key())

    @handler
    async def dispatch(self, message: Dispatch) -> str:
        """Run a round of the scenario's conversation with the Scheduler's context."""
        conversation = message.conversation_id
        key = message.dispatch_id or self._message_key()
        async with self._owning(conversation) as state:
            if _answered_before(state, key):
                log.info("agent.duplicate_dispatch", actor=self.actor_name, key=key)
                return ""
            if message.budget:
                await self._set_budget(conversation, message.budget)
            text = await self._run_round(conversation, render_dispatch(message), key=key)
            await self._report_round_end(conversation, text, message.dispatch_id)
            return text

    @handler
    async def resume(self, message: ResumeRound) -> str:
        """Finish a round that a crash interrupted (unless its redelivered request did)."""
        async with self._owning(message.conversation) as state:
            if not state.conversation.awaiting_reply:
                return ""
            text = await self._run_round(message.conversation, None)
            if message.conversation != MAIN_CONVERSATION:
                await self._report_round_end(message.conversation, text, None)
            return text

    @asynccontextmanager
    async def _owning(self, conversation: str) -> AsyncIterator[ConversationState]:
        """Hold the conversation (other processes sharing the journal wait), brought up to
        date with what they journaled; holding it again inside nests."""
        journal = self.setup.journal
        async with journal.hold(self.actor_name, conversation):
            cached = conversation in self._states  # one just read from the journal is current
            state = await self._state(conversation)
            if journal.shared and cached:
                length = await journal.length(self.actor_name, conversation)
                if length != state.journal_length:
                    log.info(
                        "agent.journal_refreshed",
                        actor=self.actor_name,
                        conversation=conversation,
                        records=length,
                        cached=state.journal_length,
                    )
                    del self._states[conversation]
                    state = await self._state(conversation)
            yield state

    def _message_key(self) -> str | None:
        envelope = self.actor_envelope
        return envelope.id if envelope is not None else None

    async def _report_round_end(
        self, conversation: str, text: str, dispatch_id: str | None
    ) -> None:
        """A scenario round that ended without a handoff would leave the scenario waiting
        on this agent for ever: tell the Scheduler, which nudges or fails it."""
        state = await self._state(conversation)
        if state.handed_off or not self._handoff_tools or state.scenario is None:
            return
        log.warning("agent.round_ended_without_handoff", actor=self.actor_name)
        await self.actor_ref.peer(self.setup.handoff_to).tell(
            RoundEnded(
                scenario=state.scenario,
                conversation=conversation,
                source=self.actor_name,
                text=text[:2000],
                dispatch_id=dispatch_id or state.round_key,
            ),
            sender=self.actor_name,
        )

    # --- the loop --------------------------------------------------------------------------------

    async def _run_round(
        self, conversation: str, text: str | None, *, key: str | None = None
    ) -> str:
        """Run a round opened by `text` (None: finish the open one). A `key` already seen is
        the same request again: its round is finished, or its answer given, not re-run."""
        async with self._owning(conversation) as state:
            return await self._round(state, text, key=key)

    async def _round(self, state: ConversationState, text: str | None, *, key: str | None) -> str:
        conversation = state.id
        scenario = state.scenario
        with structlog.contextvars.bound_contextvars(scenario=scenario, conversation=conversation):
            self._current = self._last = state
            try:
                if text is not None and (key is None or key not in state.round_keys):
                    if state.conversation.awaiting_reply:
                        await self._drive(state)  # an interrupted round finishes first
                    await self._record(state, state.conversation.start_round(text, key=key))
                    state.loaded_tokens = 0
                    state.handed_off = False
                    if key is not None:
                        state.round_keys.add(key)
                        state.round_key = key
                elif text is not None:
                    log.info("agent.request_redelivered", actor=self.actor_name, key=key)
                    if _answered_before(state, key):
                        return ""
                return await self._drive(state)
            finally:
                self._current = None

    async def _drive(self, state: ConversationState) -> str:
        conversation = state.conversation
        calls = 0
        while conversation.awaiting_reply:
            if calls >= self.setup.config.max_steps:
                log.warning("agent.max_steps", actor=self.actor_name, max_steps=calls)
                break
            response, sent, layout = (
                state.pending_response,
                state.pending_sent,
                state.pending_layout,
            )
            if response is None:
                # Due already when a crash hit between a step and its compaction: compact now,
                # as the uninterrupted run did, before paying for a call on the larger context.
                await self._compact_if_due(state)
                response, sent, layout = await self._next_response(state), None, None
            state.pending_response = state.pending_sent = state.pending_layout = None
            state.turn = conversation.next_seq
            results = await self._run_tools(state, response.tool_uses)
            record = conversation.append_step(
                response.content,
                results,
                response.usage,
                stop_reason=response.stop_reason,
                sent_estimate=sent,
                layout=layout,
            )
            await self._record(state, record)
            await self._register_written(state, response, results)
            calls += 1
            state.strategy.on_turn_complete(conversation)
            await self._compact_if_due(state)
        last = conversation.last_step
        return last.text if last is not None else ""

    async def _run_tools(
        self, state: ConversationState, uses: Sequence[ToolUseBlock]
    ) -> list[ToolResultBlock]:
        """Run the step's tools; `Read`s past the round's load budget are refused unrun."""
        budget = self.setup.config.load_budget_tokens
        refused: dict[str, ToolResultBlock] = {}
        if state.loaded_tokens >= budget:
            for use in uses:
                if use["name"] == "Read":
                    refused[use["id"]] = {
                        "type": "tool_result",
                        "tool_use_id": use["id"],
                        "is_error": True,
                        "content": (
                            f"load budget used up: this round has loaded {state.loaded_tokens} "
                            f"tokens of files (budget {budget}). Work from what you have read, "
                            "or finish the round and read a narrower range (offset/limit, "
                            "head_tail) in the next one."
                        ),
                    }
        run = [use for use in uses if use["id"] not in refused]
        done = {r["tool_use_id"]: r for r in await self._toolbox.results(run)}
        for use in run:
            result = done[use["id"]]
            if use["name"] == "Read" and not result.get("is_error"):
                state.loaded_tokens += estimate_json_tokens(result.get("content", ""))
        return [refused.get(use["id"]) or done[use["id"]] for use in uses]

    async def _system_prompt(self, state: ConversationState) -> str:
        """The role's prompt, or the scenario's own (`scenarios/<name>/prompts/<role>.md`)."""
        if state.system_prompt is None:
            state.system_prompt = self.setup.system_prompt
            workspace = self.setup.workspace
            if workspace is not None and state.scenario is not None:
                folder = anyio.Path(workspace / "scenarios" / state.scenario / "prompts")
                custom = folder / f"{self.setup.role}.md"
                if await custom.is_file():
                    state.system_prompt = await custom.read_text(encoding="utf-8")
        return state.system_prompt

    async def _next_response(self, state: ConversationState) -> ModelResponse:
        conversation = state.conversation
        turn = conversation.next_seq
        system = await self._system_prompt(state)
        payload = state.strategy.compose_payload(system, self._specs, conversation)
        try:
            response = await self._call(state, payload, turn=turn, purpose=self.setup.purpose)
        except ContextOverflowError as overflow:
            log.warning("agent.context_overflow", actor=self.actor_name, error=str(overflow))
            await self._compact(state)
            payload = state.strategy.compose_payload(system, self._specs, conversation)
            response = await self._call(state, payload, turn=turn, purpose=self.setup.purpose)
        await self._journal(
            state,
            {
                "type": "response",
                "turn": turn,
                "response": response.model_dump(mode="json"),
                "sent_estimate": conversation.account.sent_estimate,
                "layout": _dump(conversation.composed_layout),
            },
        )
        self._log_call(state, response, turn=turn, purpose=self.setup.purpose)
        return response

    async def _call(
        self, state: ConversationState, payload: Payload, *, turn: int, purpose: Purpose
    ) -> ModelResponse:
        context = CallContext(
            actor=self.actor_name,
            conversation=state.id,
            scenario=state.scenario,
            turn=turn,
            purpose=purpose,
        )
        with bind_call(context):
            return await self.setup.model.create(payload)

    def _log_call(
        self, state: ConversationState, response: ModelResponse, *, turn: int, purpose: Purpose
    ) -> None:
        """The `model.call` line, written once the reply is journaled: after a crash, a call
        with a line is never made again."""
        usage = response.usage
        budget = state.budget or self.budget
        window = budget.context_window
        self.setup.token_log.emit(
            "model.call",
            model=response.model,
            input_tokens=usage.input_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens,
            cache_read_input_tokens=usage.cache_read_input_tokens,
            output_tokens=usage.output_tokens,
            context_tokens=usage.context_tokens,
            context_window=window,
            compact_threshold=budget.compact_threshold,
            fill=min(1.0, usage.context_tokens / window),
            latency_ms=response.latency_ms,
            stop_reason=response.stop_reason,
            turn=turn,
            purpose=purpose,
            thinking=str(budget.thinking),
            effort=budget.effort,
        )

    async def _compact_if_due(self, state: ConversationState) -> None:
        if state.strategy.should_compact(state.conversation, state.budget or self.budget):
            await self._compact(state)

    async def _compact(self, state: ConversationState) -> None:
        async def summarize(payload: Payload) -> str:
            if state.pending_summary is not None:
                return state.pending_summary  # written before a crash: not paid for twice
            turn = state.conversation.next_seq
            response = await self._call(state, payload, turn=turn, purpose="compaction")
            await self._journal(
                state,
                {
                    "type": "summary",
                    "compaction": state.conversation.compactions,
                    "text": response.text,
                },
            )
            self._log_call(state, response, turn=turn, purpose="compaction")
            return response.text

        compaction = await state.strategy.compact(state.conversation, summarize)
        state.pending_summary = None
        await self._journal(state, dump_record(compaction))

    # --- journal, ledger, handoffs ----------------------------------------------------------------

    async def _state(self, conversation: str) -> ConversationState:
        state = self._states.get(conversation)
        if state is None:
            records = await self.setup.journal.read(self.actor_name, conversation)
            state = load_state(conversation, records, self._new_strategy, self.budget)
            calibration = state.conversation.account.calibration
            if calibration.samples == 0:
                calibration.ratio = self._token_ratio
            self._states[conversation] = state
        return state

    async def _set_budget(self, conversation: str, overrides: Mapping[str, Any]) -> None:
        """Give one conversation its own budget (a scenario's overrides), journaled."""
        state = await self._state(conversation)
        budget = self._budget_with(overrides)
        if budget == (state.budget or self.budget):
            return
        await self._journal(state, {"type": "budget", "overrides": dict(overrides)})
        state.budget = budget
        state.strategy = self._new_strategy(budget)

    def _budget_with(self, overrides: Mapping[str, Any]) -> ContextBudget:
        return ContextBudget.model_validate({**self.budget.model_dump(), **overrides})

    def _new_strategy(self, budget: ContextBudget | None = None) -> ContextStrategy:
        options: dict[str, Any] = {
            "summary_schema": summary_schema_for(self.setup.role),
            "on_event": self._on_context_event,
            **self.setup.strategy_options,
        }
        return make_strategy(self.setup.config.strategy, budget or self.budget, **options)

    def _on_context_event(self, event: ContextEvent) -> None:
        if event.event == "context.warning":
            log.warning(event.event, actor=self.actor_name, **event.log_fields())
        else:
            self.setup.token_log.emit(event.event, **event.log_fields())

    async def _record(self, state: ConversationState, record: ConversationRecord) -> None:
        await self._journal(state, dump_record(record))

    async def _journal(self, state: ConversationState, record: Mapping[str, Any]) -> None:
        await self.setup.journal.append(self.actor_name, state.id, record)
        state.journal_length += 1

    async def _register_paths(self, paths: list[str]) -> None:
        state = self._current
        if state is None:
            return
        record = state.conversation.register_paths(paths, source=self.actor_name)
        if record is not None:
            await self._record(state, record)

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

    async def _deliver(self, package: ContextPackage) -> None:
        state = self._current
        assert state is not None, "handoff tools only run inside a round"
        handoff = parse_package(package.model_dump(mode="json"))
        target = self.setup.handoff_to
        # Stable across a crash and re-run of the same step, so the receiver can dedupe it.
        handoff_id = f"{self.actor_name}:{state.id}:{state.turn}:{handoff.handoff_type}"
        await self.actor_ref.peer(target).tell(
            HandoffDelivered(
                scenario=state.scenario or state.id,
                conversation=state.id,
                source=self.actor_name,
                handoff_id=handoff_id,
                package=handoff,
            ),
            sender=self.actor_name,
        )
        state.handed_off = True
        await self._journal(state, {"type": "handoff", "handoff_id": handoff_id})
        self.setup.token_log.emit(
            "handoff.sent",
            handoff_type=handoff.handoff_type,
            **{"from": self.actor_name},
            to=target,
            package_tokens=estimate_json_tokens(handoff.model_dump(mode="json")),
        )
