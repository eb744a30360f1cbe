"""`baton memory list|search|forget`: the workspace's long-term memory from the command line
(README.md, "Long-term memory").

With a runtime running in the workspace the command goes through its control API (`/memory`),
as every other command does; without one it opens the store itself, read from the same
files, so memory can be read and pruned while nothing runs. It never creates a store: with
no memory file yet, there is nothing to list, find or forget.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from baton.memory.errors import UnknownMemoryError
from baton.server._memory_models import (
    DEFAULT_SEARCH_LIMIT,
    MAX_QUERY_CHARS,
    MAX_SEARCH_LIMIT,
    MemoryListing,
    MemorySearch,
    render_listing,
    render_search,
)
from baton.server.client import Client
from baton.server.errors import NoRuntimeError

if TYPE_CHECKING:
    from baton.memory import MemoryEntry, MemoryStore

MEMORY_HELP = (
    "list, search or forget long-term memory entries: the Scheduler's findings of each "
    "iteration and what agents Remembered (through the running runtime, or the store's "
    "files when none runs)"
)


class _Memory(Protocol):
    async def list(self, tags: Sequence[str]) -> MemoryListing: ...

    async def search(self, query: str, tags: Sequence[str], limit: int) -> MemorySearch: ...

    async def forget(self, entry_id: str) -> MemoryEntry: ...


class _Remote:
    """Through the runtime's control API."""

    def __init__(self, client: Client) -> None:
        self._client = client

    async def list(self, tags: Sequence[str]) -> MemoryListing:
        return await self._client.memory_list(tags)

    async def search(self, query: str, tags: Sequence[str], limit: int) -> MemorySearch:
        return await self._client.memory_search(query, tags=tags, limit=limit)

    async def forget(self, entry_id: str) -> MemoryEntry:
        return await self._client.memory_forget(entry_id)


class _Local:
    """The store opened here (None: the workspace has no memory file yet)."""

    def __init__(self, store: MemoryStore | None) -> None:
        self._store = store

    async def list(self, tags: Sequence[str]) -> MemoryListing:
        entries = [] if self._store is None else await self._store.list(tags=tags)
        return MemoryListing(tags=list(tags), entries=entries)

    async def search(self, query: str, tags: Sequence[str], limit: int) -> MemorySearch:
        hits = (
            [] if self._store is None else await self._store.recall(query, tags=tags, limit=limit)
        )
        return MemorySearch(query=query, tags=list(tags), hits=hits)

    async def forget(self, entry_id: str) -> MemoryEntry:
        if self._store is None:
            raise UnknownMemoryError(entry_id)
        return await self._store.forget(entry_id)


@asynccontextmanager
async def _memory(workspace: str) -> AsyncIterator[_Memory]:
    try:
        async with Client(workspace) as client:
            yield _Remote(client)
            return
    except NoRuntimeError:
        pass
    # The store and the configuration, loaded only when no runtime answers: `baton --help`
    # builds this command's parser (docs/architecture.md, "What a command imports").
    from baton.memory import open_memory  # noqa: PLC0415
    from baton.memory.store import default_path  # noqa: PLC0415
    from baton.pipeline.config import load_config  # noqa: PLC0415

    root = Path(workspace)
    settings = (await anyio.to_thread.run_sync(load_config, root)).memory
    if not await anyio.Path(default_path(root, settings)).exists():
        yield _Local(None)
        return
    async with await open_memory(root, settings) as store:
        yield _Local(store)


def _query(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("the query is blank: give a few words to look for")
    if len(text) > MAX_QUERY_CHARS:
        raise argparse.ArgumentTypeError(f"the query is over {MAX_QUERY_CHARS} characters")
    return text


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= MAX_SEARCH_LIMIT:
        raise argparse.ArgumentTypeError(f"{text!r}: give 1 to {MAX_SEARCH_LIMIT}")
    return value


def _entry_id(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("the id is blank: `baton memory list` shows the ids")
    return text.strip()


def _print(text: str) -> None:
    print(text, flush=True)  # noqa: T201 - the CLI's output


async def memory_list(args: argparse.Namespace) -> None:
    """`baton memory list`."""
    async with _memory(args.workspace) as memory:
        listing = await memory.list(args.tag)
    _print(listing.model_dump_json(indent=2) if args.json else render_listing(listing))


async def memory_search(args: argparse.Namespace) -> None:
    """`baton memory search QUERY`."""
    async with _memory(args.workspace) as memory:
        found = await memory.search(args.query, args.tag, args.limit)
    _print(found.model_dump_json(indent=2) if args.json else render_search(found))


async def memory_forget(args: argparse.Namespace) -> None:
    """`baton memory forget ID`."""
    async with _memory(args.workspace) as memory:
        entry = await memory.forget(args.entry_id)
    _print(f"forgot {entry.id} ({', '.join(entry.tags) or 'no tags'})")


def memory_commands(
    commands: argparse._SubParsersAction[Any],
    common: argparse.ArgumentParser,
) -> None:
    """`baton memory` and its actions `list`, `search` and `forget` (each takes `common`'s
    options, `--workspace`), added to the CLI's `commands`; each action stores its coroutine
    in `command`."""
    memory: argparse.ArgumentParser = commands.add_parser(
        "memory", help=MEMORY_HELP, description=MEMORY_HELP
    )
    # Built with `memory`'s own parser class: a usage error stays one line (exit 2).
    actions = memory.add_subparsers(
        title="actions", dest="memory_action", metavar="ACTION", required=True
    )

    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = actions.add_parser(
            name, parents=[common], help=help_text, description=help_text
        )
        return parser

    tag_help = "only entries having tag T, e.g. scenario:NAME or kind:finding (repeatable: all)"
    listing = action("list", "list the entries, oldest first: id, time, tags, then the content")
    listing.add_argument("--tag", action="append", default=[], metavar="T", help=tag_help)
    listing.add_argument("--json", action="store_true", help="print the entries as JSON")
    listing.set_defaults(command=memory_list)

    search = action("search", "find the entries most relevant to QUERY, best first")
    search.add_argument("query", type=_query, metavar="QUERY", help="a few words")
    search.add_argument("--tag", action="append", default=[], metavar="T", help=tag_help)
    search.add_argument(
        "-n",
        "--limit",
        type=_limit,
        default=DEFAULT_SEARCH_LIMIT,
        metavar="N",
        help=f"at most N entries (default {DEFAULT_SEARCH_LIMIT}, at most {MAX_SEARCH_LIMIT})",
    )
    search.add_argument("--json", action="store_true", help="print the hits as JSON")
    search.set_defaults(command=memory_search)

    forget = action("forget", "forget one entry by its id (as list and search show it)")
    forget.add_argument("entry_id", type=_entry_id, metavar="ID")
    forget.set_defaults(command=memory_forget)
