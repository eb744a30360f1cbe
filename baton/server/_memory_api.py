"""`/memory`: the workspace's long-term memory over the control API (`baton memory`; README.md,
"Long-term memory").

| method and path | does | answers |
|---|---|---|
| `GET /memory?tag=` | every entry having all the `tag`s, oldest first | 200; 422 |
| `GET /memory/search?q=&limit=&tag=` | the entries most relevant to `q`, best first | 200; 422 |
| `DELETE /memory/{entry_id}` | forget one entry; answers it | 200; 404; 422 |

Each request opens the store the workspace's `[memory]` names and closes it again: every
backend keeps its entries in the workspace's files (docs/memory.md, "Files"), so this sees
what the agents stored, whether they run in this process or in a worker. A runtime without a
workspace has no memory: its lists are empty and every id is unknown.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import FastAPI, Path, Query
from pydantic import StringConstraints
from starlette.convertors import Convertor, register_url_convertor

from baton.memory import MemoryEntry, MemoryStore, open_memory
from baton.memory.errors import UnknownMemoryError
from baton.pipeline.config import BatonConfig
from baton.runtime.runtime import Runtime
from baton.server._error_docs import error_responses
from baton.server._memory_models import (
    DEFAULT_SEARCH_LIMIT,
    MAX_QUERY_CHARS,
    MAX_SEARCH_LIMIT,
    MemoryListing,
    MemorySearch,
)

MAX_TAG_CHARS = 64
"""The store's own limit on a tag (docs/memory.md), stated in the document too."""

# Spelled out rather than `\s`: the document's regular expressions are read by other engines
# (ECMA, Rust), which disagree with Python's on a few characters.
_SPACES = r"\x09-\x0d\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_TAG_PATTERN = rf"^[^{_SPACES},\x00-\x08\x0e-\x1b\x7f]+$"
_NOT_BLANK = f"[^{_SPACES}]"

Tag = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_TAG_CHARS, pattern=_TAG_PATTERN)
]
TagQuery = Annotated[
    list[Tag],
    Query(
        description=f"only entries having this tag (repeat for several: all must match), "
        f"e.g. scenario:leave_application; 1-{MAX_TAG_CHARS} characters, no spaces, commas or "
        "control characters"
    ),
]


class _EntryId(Convertor[str]):
    """An entry id in a path: anything but `search`, so `/memory/search` is never also
    `DELETE /memory/{entry_id}` (a 405's `Allow` names only what the path takes)."""

    regex = "(?!search$)[^/]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("memory_entry_id", _EntryId())


@asynccontextmanager
async def _store(runtime: Runtime) -> AsyncIterator[MemoryStore | None]:
    workspace = runtime.workspace
    if workspace is None:
        yield None
        return
    settings = BatonConfig.of(runtime.config).memory
    async with await open_memory(workspace, settings) as store:
        yield store


def memory_routes(app: FastAPI, runtime: Runtime) -> None:
    """Add the `/memory` routes over `runtime`'s workspace to `app`."""

    @app.get("/memory", response_model=MemoryListing, tags=["memory"])
    async def memory_list(tag: TagQuery = []) -> MemoryListing:  # noqa: B006 - FastAPI copies
        """Every long-term memory entry having all the tags given, oldest first."""
        async with _store(runtime) as store:
            entries = [] if store is None else await store.list(tags=tag)
        return MemoryListing(tags=list(tag), entries=entries)

    @app.get("/memory/search", response_model=MemorySearch, tags=["memory"])
    async def memory_search(
        q: Annotated[
            str,
            Query(
                min_length=1,
                max_length=MAX_QUERY_CHARS,
                pattern=_NOT_BLANK,
                description="what to look for: a few words (not only spaces)",
            ),
        ],
        limit: Annotated[
            int, Query(ge=1, le=MAX_SEARCH_LIMIT, description="how many entries at most")
        ] = DEFAULT_SEARCH_LIMIT,
        tag: TagQuery = [],  # noqa: B006 - FastAPI copies the default
    ) -> MemorySearch:
        """The entries most relevant to `q` having all the tags given, best first."""
        async with _store(runtime) as store:
            hits = [] if store is None else await store.recall(q, tags=tag, limit=limit)
        return MemorySearch(query=q, tags=list(tag), hits=hits)

    @app.delete(
        "/memory/{entry_id:memory_entry_id}",
        response_model=MemoryEntry,
        responses=error_responses(404),
        tags=["memory"],
    )
    async def memory_forget(
        entry_id: Annotated[
            str, Path(min_length=1, max_length=200, description="the entry's id, e.g. m-1a2b")
        ],
    ) -> MemoryEntry:
        """Forget one entry; answers the entry forgotten, 404 when there is none."""
        async with _store(runtime) as store:
            if store is None:
                raise UnknownMemoryError(entry_id)
            return await store.forget(entry_id)
