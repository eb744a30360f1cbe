"""The bodies of the control API's `/memory` routes and their lines in `baton memory` (shared
by the control API, the `Client` and the command line; no FastAPI here, so the CLI starts
without it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from baton.memory import MemoryEntry, MemoryHit

DEFAULT_SEARCH_LIMIT = 5
MAX_SEARCH_LIMIT = 50
MAX_QUERY_CHARS = 500
_SHOWN_CHARS = 160


class MemoryListing(BaseModel):
    """Every entry having all the tags asked for, oldest first."""

    model_config = ConfigDict(extra="forbid")

    tags: list[str] = Field(description="the tags every listed entry has")
    entries: list[MemoryEntry]


class MemorySearch(BaseModel):
    """The entries most relevant to a query, best first."""

    model_config = ConfigDict(extra="forbid")

    query: str
    tags: list[str] = Field(description="the tags every hit has")
    hits: list[MemoryHit]


def _line(entry: MemoryEntry, score: float | None = None) -> str:
    content = " ".join(entry.content.split())
    if len(content) > _SHOWN_CHARS:
        content = content[: _SHOWN_CHARS - 3] + "..."
    scored = f"  score {score:.2f}" if score is not None else ""
    when = entry.created_at.strftime("%Y-%m-%d %H:%M")
    tags = ",".join(entry.tags) or "-"
    return f"{entry.id}  {when}  {tags}{scored}\n    {content}"


def render_listing(listing: MemoryListing) -> str:
    """`baton memory list`: one entry per two lines (id, time, tags; content), oldest first."""
    where = f" tagged {', '.join(listing.tags)}" if listing.tags else ""
    if not listing.entries:
        return f"no memory entries{where}"
    lines = [_line(entry) for entry in listing.entries]
    return "\n".join([*lines, f"{len(listing.entries)} entries{where}"])


def render_search(search: MemorySearch) -> str:
    """`baton memory search`: the hits, best first, each with its score."""
    if not search.hits:
        return f"nothing in memory matches {search.query!r}"
    return "\n".join(_line(hit.entry, hit.score) for hit in search.hits)
