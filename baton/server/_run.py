"""`baton run`: the long-lived process around one runtime and its control server."""

from __future__ import annotations

import functools
import importlib
import os
import signal
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import anyio
from anyio import CancelScope
from anyio.abc import TaskStatus

from baton._log import get_logger
from baton.agents.in_flight import CALLS_IN_FLIGHT
from baton.errors import BatonError, DiskFullFailure
from baton.models.telemetry import open_telemetry
from baton.pipeline.config import BatonConfig, load_config
from baton.pipeline.errors import CommandLineError, NoSchedulerError
from baton.pipeline.host import AGENTS, Pipeline, open_pipeline
from baton.pipeline.messages import ScenarioQuery, StartScenario
from baton.pipeline.model_source import model_source_line
from baton.pipeline.scenario_state import ACTIVE_PHASES, SCHEDULER, ScenarioState
from baton.runtime.actor import Actor
from baton.runtime.disk_writes import DISK_FULL_RETRY
from baton.runtime.runtime import Runtime
from baton.runtime.settings import redact_url
from baton.server._heap import settle_heap
from baton.server._live import RunView
from baton.server._render import render_scenario
from baton.server._run_summary import stored_outputs
from baton.server._workspace_claim import claim_workspace
from baton.server.control_server import ControlServer
from baton.server.errors import ScenarioFailure
from baton.storage.url import open_storage

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What `baton run` was asked to do."""

    workspace: Path
    submit: Sequence[str] = ()  # scenarios to submit once started, in this order
    requirement: str | None = None
    exit_when_idle: bool = False
    auto_approve: bool = False
    actors: Sequence[str] = ()
    mailbox: str | None = None
    storage: str | None = None  # `--storage`: over `[storage] url`
    roles: Sequence[str] | None = None
    record: bool = False
    json_logs: bool = False  # `--log-format json`: log lines on stderr, so no live panel


def command_line_config(
    workspace: Path, mailbox: str | None, storage: str | None = None
) -> BatonConfig:
    """The workspace's configuration with `--mailbox` and `--storage` applied on top."""
    overrides: dict[str, dict[str, str]] = {}
    if mailbox is not None:
        overrides["runtime"] = {"mailbox": mailbox}
    if storage is not None:
        overrides["storage"] = {"url": storage}
    return load_config(workspace, overrides=overrides or None)


def load_actor_class(spec: str) -> tuple[str, type[Actor]]:
    """`NAME=MODULE:CLASS` → the name and the imported `Actor` subclass."""
    name, sep, target = spec.partition("=")
    module_name, colon, class_name = target.partition(":")
    if not sep or not colon or not name or not module_name or not class_name:
        raise CommandLineError(
            f"--actor {spec!r}: write it as NAME=MODULE:CLASS, e.g. greeter=app:Greeter"
        )
    # As uvicorn does for `module:app`: the current directory's modules are importable.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CommandLineError(f"--actor {spec!r}: cannot import {module_name!r} ({exc})") from None
    found = getattr(module, class_name, None)
    if not (isinstance(found, type) and issubclass(found, Actor)):
        raise CommandLineError(
            f"--actor {spec!r}: {module_name}.{class_name} is not an Actor subclass"
        )
    return name, found


async def watch_signals(
    stop: anyio.Event,
    *,
    now: anyio.Event | None = None,
    say: Callable[[str], None] | None = None,
    task_status: TaskStatus[None],
) -> None:
    """The first SIGINT or SIGTERM sets `stop` (and says so); a second one sets `now`."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()
        async for received in signals:
            log.info("run.signal", signal=signal.Signals(received).name)
            first = not stop.is_set()
            stop.set()
            if now is not None and not first:
                now.set()
            if say is not None:
                say(STOPPING if first else "baton: stopping now")


STOPPING = "baton: stopping… (press Ctrl-C again to stop at once)"
QUICK_DRAIN_S = 0.0
"""How long a stopping `baton run` lets its actors go on once no model call is in flight:
none; what they wait for is cancelled and their journals resume it (README.md, "Running
baton")."""


async def wait_for_calls(
    runtime: Runtime, now: anyio.Event, say: Callable[[str], None], timeout: float
) -> None:
    """Before the drain: let the model calls in flight come back and be journaled (up to
    `timeout`, or until `now`), saying how many and how long; then the drain is quick."""
    in_flight = CALLS_IN_FLIGHT.count
    if in_flight and not now.is_set():
        say(
            f"baton: waiting up to {timeout:g}s for {in_flight} model call(s) in flight, so "
            "their replies are kept (press Ctrl-C again to stop at once)"
        )
        with anyio.move_on_after(timeout):
            async with anyio.create_task_group() as race:
                race.start_soon(_cancel_when_set, now, race.cancel_scope)
                await CALLS_IN_FLIGHT.wait_idle()
                race.cancel_scope.cancel()
    runtime.hurry(QUICK_DRAIN_S)


async def _cancel_when_set(event: anyio.Event, scope: CancelScope) -> None:
    await event.wait()
    scope.cancel()


async def _cancel_when_stopped(runtime: Runtime, name: str, scope: CancelScope) -> None:
    await runtime.wait_stopped(name)
    scope.cancel()


async def _cancel_when_idle(
    runtime: Runtime,
    pipeline: Pipeline,
    scope: CancelScope,
    view: RunView,
    submitted: Sequence[str],
) -> None:
    states: list[ScenarioState] = []
    full_waits = 0
    while runtime.is_alive(SCHEDULER):
        next_end = pipeline.next_scenario_end()
        try:
            states = list(await runtime.ask(SCHEDULER, ScenarioQuery(), timeout=30) or ())
        except DiskFullFailure as exc:
            # Refused at once while the disk is full: ask again after a wait, not in a loop.
            log.warning("run.idle_check_failed", error=str(exc))
            await anyio.sleep(DISK_FULL_RETRY.delay(full_waits))
            full_waits += 1
            continue
        except BatonError as exc:
            # A busy scheduler may miss the deadline: ask again rather than wait for an end
            # that may already have happened.
            log.warning("run.idle_check_failed", error=str(exc))
            continue
        full_waits = 0
        if not any(state.phase in ACTIVE_PHASES for state in states):
            break
        async with anyio.create_task_group() as race:
            race.start_soon(_cancel_when_set, next_end, race.cancel_scope)
            race.start_soon(_cancel_when_stopped, runtime, SCHEDULER, race.cancel_scope)
    await view.report_ended(runtime, pipeline)
    for state in states:
        # A submitted scenario that ended before this process (nothing ended here): its
        # state is still the answer to `--submit` (README.md, "What `baton run` shows").
        if state.scenario in submitted and state.scenario not in view.ended:
            view.ended.add(state.scenario)
            view.say(f"ended {render_scenario(state)}")
    log.info("run.idle")
    scope.cancel()


def failed_scenarios(states: Iterable[ScenarioState]) -> ScenarioFailure | None:
    """What `baton run --exit-when-idle` exits with when a scenario it ran did not complete
    (`failed`, or `stopped` at its spend cap): exit status 1, so a script or CI can tell
    (README.md, "What `baton run` shows")."""
    unfinished = [
        f"{state.scenario} ({state.phase})"
        for state in states
        if state.phase in ("failed", "stopped")
    ]
    return ScenarioFailure(unfinished) if unfinished else None


async def _start(
    runtime: Runtime,
    *,
    pipeline: Pipeline,
    server: ControlServer,
    options: RunOptions,
    actors: list[tuple[str, type[Actor]]],
    out: TextIO,
    on_submitted: Callable[[ScenarioState], None] | None = None,
) -> None:
    for name, actor_type in actors:
        await runtime.spawn(name, actor_type)
    if options.submit and not runtime.is_alive(SCHEDULER):
        raise NoSchedulerError
    shared = ""
    if runtime.distributed is not None:
        url, consumer = redact_url(runtime.distributed.url), runtime.distributed.consumer
        shared = f" · mailbox {url} · consumer {consumer}"
    print(
        f"baton: {pipeline.mode} · workspace {runtime.workspace} · socket {server.socket_path} · "
        f"token log {runtime.token_log.path}{shared}",
        file=out,
        flush=True,
    )
    workspace = runtime.workspace or options.workspace
    scenarios: Sequence[str | None] = options.submit or [None]
    for scenario in scenarios:
        source = await anyio.to_thread.run_sync(
            functools.partial(
                model_source_line, pipeline.offline, workspace, scenario, record=options.record
            )
        )
        if source is not None:
            print(f"baton: {source}", file=out, flush=True)
    for warning in [*runtime.warnings, *pipeline.warnings]:
        sys.stderr.write(f"baton: warning: {warning}\n")
    for scenario in options.submit:
        start = StartScenario(
            scenario=scenario,
            requirement=options.requirement,
            auto_approve=True if options.auto_approve else None,
            continue_interrupted=True,
        )
        state = await runtime.ask(SCHEDULER, start, timeout=30)
        print(f"submitted {render_scenario(state)}", file=out, flush=True)
        if on_submitted is not None:
            on_submitted(state)


async def _serve(
    options: RunOptions,
    actors: list[tuple[str, type[Actor]]],
    stop: anyio.Event,
    view: RunView,
    now: anyio.Event,
) -> None:
    out = view.out
    async with claim_workspace(options.workspace) as claim:
        config = await anyio.to_thread.run_sync(
            command_line_config, claim.workspace, options.mailbox, options.storage
        )
        # A store that cannot be used stops the start with one line (docs/storage.md,
        # "Checked at start").
        await open_storage(config.storage.url, claim.workspace).check()
        async with (
            open_telemetry(config.telemetry),  # outermost: flushed after the drain
            Runtime.open(claim.workspace, config=config) as runtime,
            view.following(runtime.token_log),
            open_pipeline(
                runtime,
                roles=options.roles or AGENTS,
                record=options.record,
                require_scenario_model=True,
                say=view.say,
            ) as pipeline,
            ControlServer.open(runtime, claim=claim) as server,
        ):
            # Only this scope is cancelled to stop: leaving the blocks above is the drain.
            async with anyio.create_task_group() as serving:
                serving.start_soon(_cancel_when_set, stop, serving.cancel_scope)
                serving.start_soon(_cancel_when_set, server.stop_requested, serving.cancel_scope)
                await serving.start(view.watch_scenarios, runtime, pipeline)
                await _start(
                    runtime,
                    pipeline=pipeline,
                    server=server,
                    options=options,
                    actors=actors,
                    out=out,
                    on_submitted=view.seen,
                )
                settle_heap()
                if options.exit_when_idle:
                    serving.start_soon(
                        _cancel_when_idle,
                        runtime,
                        pipeline,
                        serving.cancel_scope,
                        view,
                        options.submit,
                    )
                await anyio.sleep_forever()
            with anyio.CancelScope(shield=True):  # the summary's last word on each scenario
                await view.refresh_states(runtime)
                await view.report_ended(runtime, pipeline)
                if pipeline.storage is not None:  # the summary's outputs are in the bucket
                    view.outputs = await stored_outputs(pipeline.storage, view.scenarios().values())
                await wait_for_calls(
                    runtime, now, view.say, runtime.config.runtime.shutdown_timeout
                )
            log.info("run.stopping", workspace=str(claim.workspace))


async def run(options: RunOptions, out: TextIO) -> None:
    """Serve the workspace until SIGINT/SIGTERM, `POST /stop`, or idleness if asked for."""
    if options.requirement is not None and len(options.submit) != 1:
        raise CommandLineError(
            "--requirement goes with one --submit SCENARIO; "
            + ("add the scenario" if not options.submit else "submit the others without it")
        )
    if options.auto_approve and not options.submit:
        raise CommandLineError("--auto-approve goes with --submit SCENARIO; add the scenario")
    if not options.workspace.is_dir():
        # A mistyped path must not become a new, empty workspace without a word.
        raise CommandLineError(
            f"--workspace {options.workspace} is not a directory — give the folder that holds "
            "scenarios/ (or create it first)"
        )
    actors = [load_actor_class(spec) for spec in options.actors]
    stop, now = anyio.Event(), anyio.Event()
    view = RunView.for_output(out, workspace=options.workspace, json_logs=options.json_logs)
    view.submitting = tuple(options.submit)
    async with anyio.create_task_group() as watcher:
        # Listening before the socket exists: a signal at any time after start drains.
        await watcher.start(functools.partial(watch_signals, stop, now=now, say=view.say))
        try:
            with view.showing():
                await _serve(options, actors, stop, view, now)
        finally:
            watcher.cancel_scope.cancel()
    failure = failed_scenarios(view.scenarios().values()) if options.exit_when_idle else None
    if failure is not None:
        raise failure
