"""`AgentActor`: an agent as an actor: the messages that open its rounds, around its loop.

`Prompt` runs a round of the `main` conversation and answers with the final text; `Dispatch`
(the Scheduler's work order) runs a round of the scenario's conversation; on start the actor
sends itself a `ResumeRound` for each round a crash left unfinished. The loop itself, with
its model, tools, budget and journal, is `AgentLoop`.

The actor is keyed by conversation: it works on up to `max_concurrent_keys` conversations
(scenario runs) at once, each one's rounds one at a time, in order (docs/architecture.md,
"Keyed actors").
"""

from __future__ import annotations

from collections.abc import Hashable

import structlog
from pydantic import BaseModel, ConfigDict

from baton.agents._agent_state import MAIN
from baton.agents.agent_loop import AgentLoop, answered_before
from baton.agents.agent_setup import AgentSetup
from baton.errors import ActorDeadError, BatonError, SpendCapReachedFailure, unretriable
from baton.pipeline.ledger_facts import dispatch_facts
from baton.pipeline.messages import Dispatch, Prompt, SpendCapReached, WorkRefused
from baton.runtime.actor import Actor, handler

log = structlog.get_logger(__name__)


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


class AgentActor(Actor):
    """An agent: its loop (model, tools, conversations, journal) behind three messages."""

    def __init__(self, setup: AgentSetup) -> None:
        self.setup = setup
        self.loop = AgentLoop(setup, self)
        self.actor_max_concurrent_keys = setup.config.max_concurrent_keys

    def actor_key(self, message: object) -> Hashable | None:
        """The conversation the message opens or continues a round of."""
        if isinstance(message, Dispatch):
            return message.conversation_id
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
        return await self.loop.run_round(MAIN, message.text, key=self._message_key())

    @handler
    async def dispatch(self, message: Dispatch) -> str:
        """Run a round of the scenario's conversation with the Scheduler's context.

        A work order this agent cannot carry out as given (a `UsageError`, e.g. budget
        overrides that make no valid budget), or whose round needs a file that may not grow
        (`FileTooLargeFailure`), is refused: the asker gets the error, and the Scheduler is
        told, so the scenario ends with the reason instead of waiting."""
        conversation = message.conversation_id
        key = message.dispatch_id or self._message_key()
        async with self.loop.owning(conversation) as state:
            if answered_before(state, key):
                log.info("agent.duplicate_dispatch", actor=self.actor_name, key=key)
                return ""
            try:
                if message.budget:
                    await self.loop.set_budget(conversation, message.budget)
                text = await self.loop.run_round(
                    conversation, render_dispatch(message), key=key, facts=dispatch_facts(message)
                )
            except SpendCapReachedFailure as reached:
                await self._cap_reached(conversation, reached, message.dispatch_id)
                return ""
            except Exception as error:
                final = unretriable(error)
                if final is not None:
                    await self._refused(message, final)
                raise
            await self.loop.report_round_end(conversation, text, message.dispatch_id)
            return text

    async def _cap_reached(
        self, conversation: str, reached: SpendCapReachedFailure, dispatch_id: str | None
    ) -> None:
        """The round stopped before a call its run cannot pay for: handled, not a failure
        (nothing to retry or dead-letter); the Scheduler stops the scenario, and the same
        work order, sent again once the cap is raised, finishes the open round."""
        log.warning("agent.spend_cap_reached", actor=self.actor_name, error=str(reached))
        report = SpendCapReached(
            scenario=reached.scenario,
            conversation=conversation,
            source=self.actor_name,
            spent=reached.spent,
            cap=reached.cap,
            dispatch_id=dispatch_id,
        )
        try:
            await self.actor_ref.peer(self.setup.handoff_to).tell(report, sender=self.actor_name)
        except ActorDeadError:
            # A round resumed on start, before the Scheduler runs: its saved state already
            # says the run stopped at the cap (docs/handoffs.md, "Delivery and the Scheduler").
            log.info("agent.spend_cap_unreported", actor=self.actor_name)

    async def _refused(self, message: Dispatch, error: BatonError) -> None:
        await self._tell_refused(
            message.scenario, message.conversation_id, message.dispatch_id, error
        )

    async def _tell_refused(
        self, scenario: str | None, conversation: str, dispatch_id: str | None, error: BatonError
    ) -> None:
        if scenario is None or dispatch_id is None:
            return  # not the Scheduler's work order: the asker (or the dead letter) has it
        log.warning("agent.work_refused", actor=self.actor_name, error=str(error))
        try:
            await self.actor_ref.peer(self.setup.handoff_to).tell(
                WorkRefused(
                    scenario=scenario,
                    conversation=conversation,
                    source=self.actor_name,
                    dispatch_id=dispatch_id,
                    reason=f"{type(error).__name__}: {error}",
                ),
                sender=self.actor_name,
            )
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
                await self._cap_reached(message.conversation, reached, state.round_key)
                return ""
            except Exception as error:
                # The round cannot go on (e.g. compacting stopped helping, or its journal may
                # not grow): the Scheduler ends the scenario with the reason instead of
                # waiting for the round.
                final = unretriable(error)
                if final is not None:
                    await self._tell_refused(
                        state.scenario, message.conversation, state.round_key, final
                    )
                raise
            if message.conversation != MAIN:
                await self.loop.report_round_end(message.conversation, text, None)
            return text

    def _message_key(self) -> str | None:
        envelope = self.actor_envelope
        return envelope.id if envelope is not None else None
