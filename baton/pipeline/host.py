"""The pipeline: Init, Execute and the Scheduler, spawned into a runtime with their models.

`ANTHROPIC_API_KEY` set → every agent talks to Claude through `AnthropicModel` (one client
per model name, so agents on the same model share its concurrency limit); unset → the
offline scripted model, announced as such. The lifetime is an `async with`: on exit the
agents stop (draining their mailboxes) before their model clients close.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

import baton.pipeline.statuses  # noqa: F401 - its errors' statuses, registered with the wire
from baton._log import get_logger
from baton.agents._artifact_io import remove_write_leftovers
from baton.agents.agent_config import AgentConfig
from baton.agents.agent_setup import AgentSetup
from baton.agents.journal import FileJournalStore, JournalStore
from baton.context.strategy import ContextBudget
from baton.errors import UsageError
from baton.memory import MemoryStore
from baton.models.check import AgentModel, check_agent_models
from baton.models.protocol import Model
from baton.models.recording import RecordingModel
from baton.models.retry import ModelRetry
from baton.pipeline.config import BatonConfig
from baton.pipeline.errors import NoScenarioModelError, RecordingNeedsKeyError
from baton.pipeline.memory_config import pipeline_memory
from baton.pipeline.offline_model import OfflineModel
from baton.pipeline.roles import EXECUTE, INIT, ExecuteActor, InitActor, agent_setup
from baton.pipeline.scenario import SCENARIOS_DIR
from baton.pipeline.scenario_state import SCHEDULER, ScenarioState
from baton.pipeline.scenario_store import FileScenarioStore, ScenarioStore
from baton.pipeline.scheduler import SchedulerActor
from baton.pipeline.scheduler_memory import SchedulerMemory
from baton.pipeline.spend import SpendLedger, load_spend
from baton.runtime.runtime import Runtime
from baton.runtime.settings import redact_url
from baton.storage.local import remote_store
from baton.storage.url import open_storage

if TYPE_CHECKING:
    from baton.pipeline.redis_spend import SharedSpend
    from baton.storage.protocol import Storage

log = get_logger(__name__)

API_KEY_ENV = "ANTHROPIC_API_KEY"
AGENTS = (INIT, EXECUTE, SCHEDULER)


def online(environ: Mapping[str, str] | None = None) -> bool:
    """Whether Claude is used: an API key is set."""
    return bool((os.environ if environ is None else environ).get(API_KEY_ENV))


def model_mode(environ: Mapping[str, str] | None = None) -> str:
    """One line for the start banner: which model runs, and why."""
    if online(environ):
        return f"Claude ({API_KEY_ENV} set)"
    return (
        f"offline scripted model ({API_KEY_ENV} not set): replies come from scenario "
        "recordings and scripts, not from Claude"
    )


@dataclass
class Pipeline:
    """The running agents and the model clients they use."""

    mode: str
    models: dict[str, Model] = field(default_factory=dict)
    offline: OfflineModel | None = None
    warnings: list[str] = field(default_factory=list)
    spend: SpendLedger | None = None  # each scenario run's spend and cap; prices
    # The scenarios' files when they are in a bucket (`[storage] url`); None: the workspace
    # folder (docs/storage.md, "What is stored where").
    storage: Storage | None = None
    _next_end: anyio.Event = field(default_factory=anyio.Event)
    _next_change: anyio.Event = field(default_factory=anyio.Event)
    _ended: list[ScenarioState] = field(default_factory=list)
    _changes: list[ScenarioState] = field(default_factory=list)

    async def spend_shared(self) -> None:
        """Return once the caps and costs this process set are in the shared ledger: before
        a record is saved, as a worker may take its work order at once."""
        if self.spend is not None:
            await self.spend.shared_up_to_date()

    def next_scenario_end(self) -> anyio.Event:
        """Set when the next scenario ends; take it *before* checking, so no end is missed."""
        return self._next_end

    def take_ended(self) -> list[ScenarioState]:
        """The scenarios that ended (completed, failed, stopped) since the last call."""
        ended, self._ended = self._ended, []
        return ended

    def _scenario_ended(self, state: ScenarioState) -> None:
        self._ended.append(state)
        ended, self._next_end = self._next_end, anyio.Event()
        ended.set()

    def next_change(self) -> anyio.Event:
        """Set when the Scheduler next changes a scenario's state (its phase, a wait for a
        model, its end); take it *before* `take_changes`, so no change is missed."""
        return self._next_change

    def take_changes(self) -> list[ScenarioState]:
        """Every state the Scheduler changed to since the last call, in order: a phase
        passed through in a moment (a new run that fails at once) is among them."""
        changes, self._changes = self._changes, []
        return changes

    def _scenario_changed(self, state: ScenarioState) -> None:
        self._changes.append(state)
        changed, self._next_change = self._next_change, anyio.Event()
        changed.set()


def require_offline_source(offline: OfflineModel, scenario: str) -> None:
    """`NoScenarioModelError` unless `scenario` has a recording or an offline script."""
    if offline.source_for(scenario) is None:
        raise NoScenarioModelError(scenario)


def journal_for(runtime: Runtime) -> JournalStore:
    """Journals beside the mailboxes: in the workspace, or in Redis when processes share them
    (whichever worker handles a conversation's message must see all of it)."""
    distributed = runtime.distributed
    if distributed is None:
        assert runtime.workspace is not None
        return FileJournalStore(runtime.workspace)
    # Imported here: `import baton` does not load redis-py.
    from baton.agents.redis_journal import RedisJournalStore  # noqa: PLC0415

    return RedisJournalStore(
        distributed.client,
        owner=distributed.consumer,
        prefix=distributed.settings.prefix,
        lease_ttl=distributed.settings.lease_ttl,
    )


def records_for(
    runtime: Runtime, before_save: Callable[[], Awaitable[None]] | None = None
) -> ScenarioStore:
    """The Scheduler's records beside the mailboxes: in the workspace, or in Redis when
    processes share them, so any process can host the Scheduler after a restart (README.md,
    "Scaling out"). `before_save` is awaited before a record is saved in Redis."""
    distributed = runtime.distributed
    if distributed is None:
        assert runtime.workspace is not None
        return FileScenarioStore(runtime.workspace)
    # Imported here: `import baton` does not load redis-py.
    from baton.pipeline.redis_scenario_store import RedisScenarioStore  # noqa: PLC0415

    return RedisScenarioStore(
        distributed.client,
        prefix=distributed.settings.prefix,
        url=redact_url(distributed.url),
        before_save=before_save,
    )


def shared_spend_for(runtime: Runtime) -> SharedSpend | None:
    """The spend every process adds to when processes share a Redis mailbox, so a run's cap
    counts every worker's calls (README.md, "Scaling out"); None: this process's own."""
    distributed = runtime.distributed
    if distributed is None:
        return None
    from baton.pipeline.redis_spend import SharedSpend  # noqa: PLC0415

    return SharedSpend(distributed.client, prefix=distributed.settings.prefix)


def scenario_storage(deployment: BatonConfig, workspace: Path) -> Storage | None:
    """The process's one store of the scenarios' files, handed to every agent, the Scheduler
    and its artifact store: a bucket (`[storage] url`), or None for the workspace folder, whose
    files keep today's code paths (docs/storage.md, "What is stored where")."""
    return remote_store(open_storage(deployment.storage.url, workspace))


def check_roles(roles: Sequence[str]) -> tuple[str, ...]:
    """The pipeline agents named, in pipeline order; `UsageError` for any other name."""
    unknown = [role for role in roles if role not in AGENTS]
    if unknown or not roles:
        raise UsageError(
            f"unknown pipeline actor(s) {', '.join(map(repr, unknown)) or '(none given)'}: "
            f"choose from {', '.join(AGENTS)}"
        )
    return tuple(role for role in AGENTS if role in roles)


def model_concurrency(deployment: BatonConfig, roles: Iterable[str]) -> dict[str, int]:
    """Calls in flight allowed per model: one client serves every agent on a model, sized
    for the largest `max_concurrency` among them (README.md, "Configuration")."""
    concurrency: dict[str, int] = {}
    for role in roles:
        config = deployment.agent(role)
        concurrency[config.model] = max(concurrency.get(config.model, 0), config.max_concurrency)
    return concurrency


async def _ready_workspace(runtime: Runtime) -> Path:
    """The runtime's workspace (the pipeline needs one), rid of the temp files of writes a
    killed process left under `scenarios/`."""
    workspace = runtime.workspace
    if workspace is None:
        raise UsageError("the pipeline needs a workspace: Runtime.open(workspace=...)")
    removed = await anyio.to_thread.run_sync(remove_write_leftovers, workspace / SCENARIOS_DIR)
    if removed:
        log.info("artifacts.leftovers_removed", count=removed)
    return workspace


async def _check_models(agents: list[AgentModel], say: Callable[[str], None] | None) -> list[str]:
    """`check_agent_models`, said first when it looks them up online (`say`): a slow or
    unreachable Models API is a wait the person should know the cause of."""
    if say is not None and agents:
        where = getattr(agents[0].model, "base_url", "the API")
        say(f"baton: checking the agents' models with the Models API at {where}…")
    return await check_agent_models(agents)


@asynccontextmanager
async def open_pipeline(
    runtime: Runtime,
    *,
    environ: Mapping[str, str] | None = None,
    roles: Sequence[str] = AGENTS,
    model_retry: ModelRetry | None = None,
    record: bool = False,
    require_scenario_model: bool = False,
    say: Callable[[str], None] | None = None,
) -> AsyncIterator[Pipeline]:
    """Spawn the pipeline's agents (all three, or `roles` of them: other processes run the
    rest over a shared Redis) into `runtime` for the block (it needs a workspace).
    `model_retry` replaces how Init and Execute wait out an unavailable model (tests inject
    a sleep there). `record` appends every reply of a scenario's call to its recording (it
    needs the API key); `require_scenario_model` refuses offline the submit of a scenario
    with neither a recording nor a script (docs/recordings.md), as `baton run` does. `say`
    hears what the start checks while it waits on it (the Models API, online)."""
    workspace = await _ready_workspace(runtime)
    roles = check_roles(roles)
    if roles != AGENTS and runtime.distributed is None:
        raise UsageError(
            f"running only {', '.join(roles)} needs the other actors in other processes: "
            "use a redis://HOST:PORT/DB mailbox"
        )
    if record and not online(environ):
        raise RecordingNeedsKeyError
    deployment = BatonConfig.of(runtime.config)
    pipeline = Pipeline(mode=model_mode(environ), storage=scenario_storage(deployment, workspace))
    journal = journal_for(runtime)
    store = records_for(runtime, pipeline.spend_shared)
    async with AsyncExitStack() as clients:
        offline = None if online(environ) else OfflineModel(workspace, storage=pipeline.storage)
        pipeline.offline = offline
        check_model = (
            functools.partial(require_offline_source, offline)
            if offline is not None and require_scenario_model
            else None
        )

        async def model_for(config: AgentConfig) -> Model:
            if offline is not None:
                return offline
            known = pipeline.models.get(config.model)
            if known is not None:
                return known
            # Imported here: the SDK costs half a second to load and offline runs skip it.
            sdk_model = importlib.import_module("baton.models.anthropic")
            client = sdk_model.AnthropicModel(
                config.model,
                context_window=config.context_window,
                max_output_tokens=config.max_output_tokens,
                # One client per model, so one limiter and one 429 pause for every agent and
                # conversation that calls it; its size is the largest the agents ask for.
                max_concurrency=concurrency[config.model],
            )
            created: Model = await clients.enter_async_context(client)
            if record:
                created = RecordingModel(created, workspace)
            pipeline.models[config.model] = created
            return created

        concurrency = model_concurrency(deployment, roles)
        agents = [
            AgentModel(role, config, await model_for(config))
            for role in roles
            for config in [deployment.agent(role)]
        ]
        # Before any agent starts: a retired model stops the process here, with one line.
        pipeline.warnings = await _check_models(agents, say if offline is None else None)
        # A cap counts every call: baton.toml's, with an agent's model unpriced, stops the
        # start here (README.md, "Spend cap").
        models = {agent.actor: agent.model.name for agent in agents}
        pipeline.spend = spend = await _open_spend(
            runtime, deployment, store, models, roles=roles, clients=clients
        )
        # Closed after the agents stop (the exit stack unwinds after the `finally` below).
        memory = await clients.enter_async_context(pipeline_memory(workspace, deployment.memory))
        spawned: list[str] = []
        try:
            # Messages left by a previous run are redelivered at once: no agent may hand
            # off to a Scheduler not yet spawned, nor the Scheduler dispatch to an agent.
            async with runtime.starting_together():
                for role, agent in zip(roles, agents, strict=True):
                    setup = agent_setup(
                        role,
                        deployment.agent(role),
                        workspace=workspace,
                        model=agent.model,
                        journal=journal,
                        token_log=runtime.token_log,
                        context_reporter=runtime.context_providers,
                        write_paths=deployment.sandbox.write_paths,
                        memory=memory,
                        recall_limit=deployment.memory.recall_limit,
                    )
                    setup = dataclasses.replace(setup, spend=spend, storage=pipeline.storage)
                    if model_retry is not None:
                        setup = dataclasses.replace(setup, model_retry=model_retry)
                    if role == SCHEDULER:
                        await _spawn_scheduler(
                            runtime,
                            pipeline,
                            setup,
                            deployment=deployment,
                            check_model=check_model,
                            memory=memory,
                            store=store,
                        )
                    else:
                        actor = InitActor if role == INIT else ExecuteActor
                        await runtime.spawn(role, actor, setup)
                    spawned.append(role)
            log.info("pipeline.started", mode=pipeline.mode, agents=spawned)
            yield pipeline
        finally:
            # The agents first: a round finishing while they drain still hands off to a
            # running Scheduler; a work order the Scheduler sends after that is saved in
            # its outbox and sent again at the next start.
            for role in sorted(spawned, key=lambda role: role == SCHEDULER):
                if runtime.is_alive(role):
                    await runtime.stop(role)


async def _open_spend(
    runtime: Runtime,
    deployment: BatonConfig,
    store: ScenarioStore,
    models: Mapping[str, str],
    *,
    roles: Sequence[str],
    clients: AsyncExitStack,
) -> SpendLedger:
    """The runs' ledger (`load_spend`), shared with the other processes for as long as
    `clients` is open: until the agents have stopped, so their last calls count too."""
    hosts_scheduler = SCHEDULER in roles
    spend = await load_spend(
        deployment,
        store,
        runtime.token_log.path,
        models,
        shared=shared_spend_for(runtime),
        hosts_scheduler=hosts_scheduler,
    )
    await clients.enter_async_context(spend.sharing(follow=hosts_scheduler))
    return spend


async def _spawn_scheduler(
    runtime: Runtime,
    pipeline: Pipeline,
    setup: AgentSetup,
    *,
    deployment: BatonConfig,
    check_model: Callable[[str], None] | None,
    memory: MemoryStore | None,
    store: ScenarioStore,
) -> None:
    assert runtime.workspace is not None
    # Init's and Execute's budgets as configured, even when other processes run them:
    # submit checks a scenario's overrides against these.
    budgets = {
        agent: ContextBudget.model_validate(deployment.agent(agent), from_attributes=True)
        for agent in (INIT, EXECUTE)
    }
    await runtime.spawn(
        SCHEDULER,
        SchedulerActor,
        dataclasses.replace(setup, purpose="task_summary"),
        runtime.workspace,
        pipeline._scenario_ended,
        budgets=budgets,
        on_warning=pipeline.warnings.append,
        check_model=check_model,
        on_changed=pipeline._scenario_changed,
        store=store,
        memory=None
        if memory is None
        else SchedulerMemory(memory, deployment.memory, runtime.token_log),
    )
