"""`baton worker`: more consumers for named pipeline actors, in another process or machine.

A worker opens the workspace's runtime on a Redis mailbox and spawns only the actors it was
asked for. Their mailboxes are the same Redis streams `baton run` reads, so the work spreads
over every process that runs the actor. It takes no workspace claim and serves no control
socket: `baton run` is the one process people talk to. With a remote store it writes nothing
in its own folder: its token log goes to the Redis stream alone, its log to stderr, its
compaction audits to the store (docs/storage.md, "A worker's own directory").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import anyio

from baton._log import get_logger
from baton.errors import BatonError, UsageError
from baton.models.telemetry import open_telemetry
from baton.pipeline.config import BatonConfig
from baton.pipeline.errors import CommandLineError
from baton.pipeline.host import check_roles, open_pipeline
from baton.pipeline.scenario_state import SCHEDULER
from baton.runtime.runtime import Runtime
from baton.runtime.settings import is_redis_url, redact_url
from baton.server._heap import settle_heap
from baton.server._run import command_line_config, watch_signals
from baton.storage.url import open_storage

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """What `baton worker` was asked to do."""

    workspace: Path
    actors: Sequence[str]  # pipeline actor names, one per item
    mailbox: str | None = None
    storage: str | None = None  # `--storage`: over `[storage] url`


def _roles(names: Sequence[str]) -> tuple[str, ...]:
    if SCHEDULER in names:
        raise CommandLineError(
            "the scheduler runs in `baton run` only (one per deployment): a worker takes "
            "init and/or execute"
        )
    try:
        return check_roles(names)
    except UsageError as exc:
        raise CommandLineError(f"--actors: {exc}") from None


def keeps_no_files(config: BatonConfig) -> bool:
    """Whether a worker on `config` writes nothing in its folder: with a remote store and a
    Redis mailbox, everything it keeps is shared, so its folder may be empty and stay so
    (docs/storage.md, "A worker's own directory")."""
    return is_redis_url(config.runtime.mailbox) and bool(config.storage.url)


def logs_on_stderr(workspace: Path, mailbox: str | None, storage: str | None) -> bool:
    """Whether `baton worker` with these options writes its log on stderr rather than into
    the process log file: when it keeps no files (blocking: it reads `baton.toml`)."""
    try:
        config = command_line_config(workspace, mailbox, storage)
    except BatonError:
        return False  # the command itself says what is wrong, once it runs
    return keeps_no_files(config)


async def work(options: WorkerOptions, out: TextIO) -> None:
    """Consume the named actors' mailboxes until SIGINT/SIGTERM, then drain and stop."""
    roles = _roles(options.actors)
    workspace = options.workspace
    if not await anyio.Path(workspace).is_dir():
        raise CommandLineError(f"workspace {workspace} is not a directory")
    config = await anyio.to_thread.run_sync(
        command_line_config, workspace, options.mailbox, options.storage
    )
    if not is_redis_url(config.runtime.mailbox):
        raise CommandLineError(
            "a worker shares mailboxes with `baton run` over Redis: pass --mailbox "
            "redis://HOST:PORT/DB (or set runtime.mailbox in baton.toml)"
        )
    # As `baton run`: a store that cannot be used stops the start with one line.
    await open_storage(config.storage.url, workspace).check()
    bare = keeps_no_files(config)
    if bare:
        # Long-term memory is a file on one host's disk (docs/memory.md, "Backends"), which
        # no other host would read: here the agents go without its tools, and the Scheduler
        # still recalls entries into every work order (docs/storage.md, "A worker's own
        # directory").
        memory = config.memory.model_copy(update={"enabled": False})
        config = config.model_copy(update={"memory": memory})
    stop = anyio.Event()
    async with anyio.create_task_group() as watcher:
        await watcher.start(watch_signals, stop)
        async with (
            open_telemetry(config.telemetry),  # outermost: flushed after the drain
            Runtime.open(workspace, config=config, token_log_file=not bare) as runtime,
            open_pipeline(runtime, roles=roles) as pipeline,
        ):
            distributed = runtime.distributed
            assert distributed is not None
            print(
                f"baton worker: {', '.join(roles)} · {pipeline.mode} · workspace "
                f"{runtime.workspace} · mailbox {redact_url(distributed.url)} · consumer "
                f"{distributed.consumer}",
                file=out,
                flush=True,
            )
            settle_heap()
            await stop.wait()
            log.info("worker.stopping", actors=list(roles))
        watcher.cancel_scope.cancel()
