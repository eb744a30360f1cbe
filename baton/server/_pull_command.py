"""`baton pull NAME DIR`: copy a scenario's files from the workspace's store into a local
folder (README.md, "Running baton"; docs/storage.md, "`baton pull`").

The store is the one `baton run` would use: `[storage] url` of the workspace's `baton.toml`,
`BATON_STORAGE__URL` over it, `--storage` over both; empty, the workspace folder itself.
Every object under `scenarios/NAME/` is copied to the same relative path under DIR, each
written atomically. DIR is created when missing; one that holds anything is refused unless
`--force`, and then only the files the scenario has are replaced.

It imports only what it uses: the settings, the storage layer and, for an `s3://` store, its
client; no runtime, server, agent or model (docs/architecture.md, "What a command imports").
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
from pydantic import ValidationError

from baton.errors import ConfigError
from baton.pipeline.errors import CommandLineError
from baton.pipeline.scenario_names import check_scenario_name
from baton.runtime.settings import KernelConfig, describe_errors, read_config
from baton.storage.config import StorageConfig
from baton.storage.errors import ObjectNotFoundError
from baton.storage.local import LocalStorage
from baton.storage.protocol import ObjectInfo, Storage
from baton.storage.url import open_storage

COPIES_AT_ONCE = 8
"""Objects read and written at the same time: a bucket's latency, not its bandwidth, is what
a scenario's many small files wait on."""


@dataclass(frozen=True, slots=True)
class PullOptions:
    """What `baton pull` was asked to do."""

    workspace: Path
    scenario: str
    into: Path
    storage: str | None = None  # `--storage`: over `[storage] url`
    force: bool = False


class _Settings(KernelConfig):
    """The kernel's settings with `[storage]` checked: all `pull` reads of `baton.toml`."""

    storage: StorageConfig = StorageConfig()  # type: ignore[assignment]


def storage_url(workspace: Path, storage: str | None) -> str:
    """The url of the workspace's store: `baton.toml`, then `BATON_*`, then `storage`."""
    overrides = {"storage": {"url": storage}} if storage is not None else None
    data, source = read_config(workspace, overrides=overrides)
    try:
        return _Settings.model_validate(data).storage.url
    except ValidationError as exc:
        raise ConfigError(describe_errors(exc, source)) from None


def _refuse_target(into: Path, force: bool) -> None:
    """Refuse a file at `into`, or a folder with anything in it (blocking)."""
    if into.exists() and not into.is_dir():
        raise CommandLineError(f"{into} is not a folder — name a folder to copy into")
    if into.is_dir() and not force:
        with os.scandir(into) as entries:
            if any(entries):
                raise CommandLineError(
                    f"{into} is not empty — name a new or empty folder, or pass --force to "
                    "replace the files the scenario has there"
                )


async def _copy(
    source: Storage, folder: str, item: ObjectInfo, target: LocalStorage, slots: anyio.Semaphore
) -> None:
    async with slots:
        await target.write(item.path, await source.read(f"{folder}/{item.path}"))


async def pull(options: PullOptions, say: Callable[[str], None]) -> None:
    """Copy every object under `scenarios/NAME/` of the workspace's store into DIR and say
    what was copied: a line per file, then the count and the bytes."""
    name = check_scenario_name(options.scenario)
    await anyio.to_thread.run_sync(_refuse_target, options.into, options.force)
    url = await anyio.to_thread.run_sync(storage_url, options.workspace, options.storage)
    source = open_storage(url, options.workspace)
    await source.check()  # an unreachable store says so, not "no such scenario"
    folder = f"scenarios/{name}"
    listing = await source.list(folder)
    if not listing.objects:
        raise ObjectNotFoundError(
            f"{folder}/",
            source.url,
            "check the scenario's name, and the store (--storage, [storage] url)",
        )
    target = LocalStorage(options.into)  # its first write makes the folder
    slots = anyio.Semaphore(COPIES_AT_ONCE)
    async with anyio.create_task_group() as copies:
        for item in listing.objects:
            copies.start_soon(_copy, source, folder, item, target, slots)
    for item in listing.objects:
        say(f"{item.path}  {item.size:,} bytes")
    count = len(listing.objects)
    say(
        f"pulled {count} file{'s' if count != 1 else ''} ({listing.size:,} bytes) of scenario "
        f"{name} from {source.url} into {options.into}"
    )
