"""`AgentActor`: an agent as an actor: the messages that open its rounds, around its loop.

`Prompt` runs a round of the `main` conversation and answers with the final text; on start
the actor sends itself a `ResumeRound` for each round a crash left unfinished. A round that
someone assigned (the pipeline's work orders, in a subclass's handler) runs through
`assigned_round`, which reports how it went to `setup.reports`. The loop itself, with its
model, tools, budget and journal, is `AgentLoop`.

The actor is keyed by conversation: it works on up to `max_concurrent_keys` conversations
(scenario runs) at once, each one's rounds one at a time, in order (docs/architecture.md,
"Keyed actors").
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from baton._log import get_logger
from baton.agents._agent_state import ConversationState
from baton.agents.agent_loop import AgentLoop, answered_before
from baton.agents.agent_setup import AgentSetup
from baton.agents.errors import SpendCapReachedFailure
from baton.agents.messages import MAIN, Prompt, ResumeRound
from baton.context.ledger import KeyFact
from baton.errors import BatonError, unretriable
from baton.runtime.actor import Actor, handler
from baton.runtime.errors import ActorDeadError

log = get_logger(__name__)


class AgentActor(Actor):
    """An agent: its loop (model, tools, conversations, journal) behind its messages."""

    def __init__(self, setup: AgentSetup) -> None:
        self.setup = setup
        self.loop = AgentLoop(setup, self)
        self.actor_max_concurrent_keys = setup.config.max_concurrent_keys

    def actor_key(self, message: object) -> Hashable | None:
        """The conversation the message opens or continues a round of."""
        if isinstance(message, ResumeRound):
            return message.conversation
        return MAIN

    async def on_start(self) -> None:
        for conversation in await self.loop.start():
            log.info("agent.resuming", actor=self.actor_name, conversation=conversation)
            await self.actor_ref.tell(ResumeRound(conversation=conversation))

    async def on_stop(self) -> None:
        await self.loop.stop()

    def context_fill(self) -> dict[str, int]:
        """The size of the conversation worked on last, against its window and threshold."""
        return self.loop.context_fill()

    @handler
    async def prompt(self, message: Prompt) -> str:
        """Run a round of the `main` conversation; the reply is the final assistant text."""
        return await self.loop.run_round(MAIN, message.text, key=self.message_key())

    async def assigned_round(
        self,
        conversation: str,
        text: str,
        *,
        key: str | None,
        dispatch_id: str | None,
        facts: Sequence[KeyFact] = (),
        budget: Mapping[str, Any] | None = None,
    ) -> str:
        """Run a round someone assigned, once per `key`, with the conversation's `budget`
        overrides set first; its end without a handoff is reported to `setup.reports`.

        A round that stops at its run's spend cap is handled (reported, nothing to retry or
        dead-letter). One this agent cannot carry out as given (a `UsageError`, e.g. budget
        overrides that make no valid budget), or that needs a file that may not grow
        (`FileTooLargeFailure`), is refused: the asker gets the error, and whoever assigned
        it is told, so it ends with the reason instead of waiting."""
        async with self.loop.owning(conversation) as state:
            if answered_before(state, key):
                log.info("agent.duplicate_dispatch", actor=self.actor_name, key=key)
                return ""
            try:
                if budget:
                    await self.loop.set_budget(conversation, budget)
                answer = await self.loop.run_round(conversation, text, key=key, facts=facts)
            except SpendCapReachedFailure as reached:
                await self._cap_reached(state, reached, dispatch_id)
                return ""
            except Exception as error:
                final = unretriable(error)
                if final is not None:
                    await self._refused(state, dispatch_id, final)
                raise
            await self.loop.report_round_end(conversation, answer, dispatch_id)
            return answer

    async def _cap_reached(
        self, state: ConversationState, reached: SpendCapReachedFailure, dispatch_id: str | None
    ) -> None:
        """The round stopped before a call its run cannot pay for: whoever assigned it stops
        the run, and the same request, sent again once the cap is raised, finishes it."""
        log.warning("agent.spend_cap_reached", actor=self.actor_name, error=str(reached))
        round_ = self.loop.round_of(state, dispatch_id)
        if round_ is None or self.setup.reports is None:
            return
        try:
            await self.setup.reports.spend_cap_reached(self.actor_ref, round_, reached)
        except ActorDeadError:
            # A round resumed on start, before the Scheduler runs: its saved state already
            # says the run stopped at the cap (docs/handoffs.md, "Delivery and the Scheduler").
            log.info("agent.spend_cap_unreported", actor=self.actor_name)

    async def _refused(
        self, state: ConversationState, dispatch_id: str | None, error: BatonError
    ) -> None:
        round_ = self.loop.round_of(state, dispatch_id)
        if round_ is None or round_.dispatch_id is None or self.setup.reports is None:
            return  # not an assigned round: the asker (or the dead letter) has it
        log.warning("agent.work_refused", actor=self.actor_name, error=str(error))
        try:
            await self.setup.reports.refused(self.actor_ref, round_, error)
        except ActorDeadError:
            # A round resumed on start, before the Scheduler runs (or in a process without
            # one): the failure stays in this actor's log and with the asker.
            log.info("agent.refusal_unreported", actor=self.actor_name)

    @handler
    async def resume(self, message: ResumeRound) -> str:
        """Finish a round that a crash interrupted (unless its redelivered request did)."""
        async with self.loop.owning(message.conversation) as state:
            if not state.conversation.awaiting_reply:
                return ""
            try:
                text = await self.loop.run_round(message.conversation, None)
            except SpendCapReachedFailure as reached:
                await self._cap_reached(state, reached, state.round_key)
                return ""
            except Exception as error:
                # The round cannot go on (e.g. compacting stopped helping, or its journal may
                # not grow): whoever assigned it ends it with the reason instead of waiting.
                final = unretriable(error)
                if final is not None:
                    await self._refused(state, state.round_key, final)
                raise
            if message.conversation != MAIN:
                await self.loop.report_round_end(message.conversation, text, None)
            return text

    def message_key(self) -> str | None:
        """The id of the message being handled: a round's key when its sender gave none."""
        envelope = self.actor_envelope
        return envelope.id if envelope is not None else None
