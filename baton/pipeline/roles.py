"""The built-in agents: Init and Execute (their defaults: docs/models.md, "Defaults"), each a
configured `AgentActor` that takes the Scheduler's work orders (`Dispatch`) and reports its
rounds to it (`SchedulerReports`).

A role decides the shipped system prompt (package data under `baton/pipeline/prompts/`,
replaceable per workspace with `system_prompt = "path"` in its config: a regular file inside the
workspace, see `baton.agents.prompt_files`), the tools, and the summary schema its compactions
produce.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from baton.agents.agent import AgentActor
from baton.agents.agent_config import AgentConfig, ContextReporter, TokenSink
from baton.agents.agent_setup import AgentSetup, ToolHooks
from baton.agents.journal import JournalStore
from baton.agents.prompt_files import read_prompt_file
from baton.agents.tools import Sandbox, Tool, Toolbox, file_tools
from baton.agents.tools.memory import memory_tools
from baton.errors import ConfigError
from baton.memory import MemoryStore
from baton.models.protocol import Model
from baton.pipeline.artifacts import ARTIFACT_PLACES, check_artifact
from baton.pipeline.handoff_tools import complete_scenario, handoff_to_execute, return_to_init
from baton.pipeline.ledger_facts import DEFAULT_FACT_PATTERNS, dispatch_facts
from baton.pipeline.messages import Dispatch
from baton.pipeline.reports import SchedulerReports
from baton.pipeline.scenario_state import SCHEDULER
from baton.pipeline.summaries import summary_schema_for
from baton.runtime.actor import handler

INIT = "init"
EXECUTE = "execute"

_HANDOFF_TOOLS: dict[str, tuple[Callable[..., Tool[Any]], ...]] = {
    INIT: (handoff_to_execute,),
    EXECUTE: (return_to_init, complete_scenario),
    SCHEDULER: (),
}


def shipped_prompt(role: str) -> str:
    """The system prompt baton ships for `role` (`init`, `execute`, `scheduler`)."""
    resource = resources.files("baton.pipeline.prompts").joinpath(f"{role}.md")
    if not resource.is_file():
        raise ConfigError(f"no shipped system prompt for role {role!r}; set system_prompt")
    return resource.read_text(encoding="utf-8")


def system_prompt(role: str, config: AgentConfig, workspace: Path | None) -> str:
    """The role's prompt, or the workspace file its config names instead."""
    if config.system_prompt is None:
        return shipped_prompt(role)
    if workspace is None:
        raise ConfigError(f"{role}: system_prompt needs a workspace to resolve its path")
    return read_prompt_file(workspace, config.system_prompt, key=f"actors.{role}.system_prompt")


def role_toolbox(
    role: str,
    workspace: Path,
    config: AgentConfig,
    *,
    write_paths: Sequence[str] = (),
    memory: MemoryStore | None = None,
    recall_limit: int = 5,
) -> Callable[[ToolHooks], Toolbox]:
    """Builds the role's toolbox once the actor supplies its handoff hooks; `write_paths`
    are `[sandbox] write_paths`, where Write may write besides the scenario's folder. With a
    `memory` store, Init and Execute also get Remember, Recall and Forget (README.md,
    "Long-term memory")."""
    sandbox = Sandbox(workspace, write_paths=write_paths)
    handoffs = _HANDOFF_TOOLS.get(role, ())

    def build(hooks: ToolHooks) -> Toolbox:
        tools: list[Tool[Any]] = (
            []
            if role == SCHEDULER
            else file_tools(
                sandbox, storage=hooks.storage, check=check_artifact, check_note=ARTIFACT_PLACES
            )
        )
        tools += [
            make(
                sandbox,
                deliver=hooks.deliver,
                register_paths=hooks.register_paths,
                storage=hooks.storage,
            )
            for make in handoffs
        ]
        if memory is not None and role != SCHEDULER:
            tools += memory_tools(memory, role, recall_limit=recall_limit)
        return Toolbox(tools, timeout=config.tool_timeout_s)

    return build


def agent_setup(
    role: str,
    config: AgentConfig,
    *,
    workspace: Path,
    model: Model,
    journal: JournalStore,
    token_log: TokenSink,
    reports_to: str = SCHEDULER,
    context_reporter: ContextReporter | None = None,
    write_paths: Sequence[str] = (),
    memory: MemoryStore | None = None,
    recall_limit: int = 5,
) -> AgentSetup:
    """Everything an `AgentActor` of `role` needs, from its config and the workspace."""
    return AgentSetup(
        role=role,
        config=config,
        model=model,
        system_prompt=system_prompt(role, config, workspace),
        journal=journal,
        token_log=token_log,
        tools=role_toolbox(
            role,
            workspace,
            config,
            write_paths=write_paths,
            memory=memory,
            recall_limit=recall_limit,
        ),
        reports=SchedulerReports(reports_to),
        summary_schema=summary_schema_for(role),
        fact_patterns=DEFAULT_FACT_PATTERNS,
        workspace=workspace,
        context_reporter=context_reporter,
    )


def render_dispatch(message: Dispatch) -> str:
    """The user turn a dispatch opens: the task context, then the package (paths only)."""
    parts = [message.agent_context.render()]
    if message.package is not None:
        tag = f"{message.package.handoff_type}_context"
        parts.append(f"<{tag}>\n{message.package.model_dump_json(indent=2)}\n</{tag}>")
    return "\n\n".join(part for part in parts if part.strip())


class PipelineAgent(AgentActor):
    """An agent of the pipeline: it also takes the Scheduler's work orders."""

    def actor_key(self, message: object) -> Hashable | None:
        """The conversation the message opens or continues a round of."""
        if isinstance(message, Dispatch):
            return message.conversation_id
        return super().actor_key(message)

    @handler
    async def dispatch(self, message: Dispatch) -> str:
        """Run a round of the scenario's conversation with the Scheduler's context; its end,
        a refusal or a spend cap reached is reported to the Scheduler (`assigned_round`)."""
        return await self.assigned_round(
            message.conversation_id,
            render_dispatch(message),
            key=message.dispatch_id or self.message_key(),
            dispatch_id=message.dispatch_id,
            facts=dispatch_facts(message),
            budget=message.budget,
        )


class InitActor(PipelineAgent):
    """The Init Agent: designs the scenario (Layer 1) and revises it on Execute's feedback."""


class ExecuteActor(PipelineAgent):
    """The Execute Agent: builds, runs and evaluates iterations (Layers 2-4)."""
