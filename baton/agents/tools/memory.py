"""Memory tools: `Remember`, `Recall` and `Forget`, over the workspace's long-term memory
(README.md, "Long-term memory").

Every entry an agent stores is tagged with the scenario its round works on (`scenario:<name>`,
the base name without `@<run>`, so every run of a scenario shares its memory) and with the
agent's role (`role:<agent>`); those two tags are the runtime's to set, so a model cannot
file an entry under another scenario. `Recall` searches the scenario's entries unless asked
for every scenario's, and `Forget` removes only the scenario's own entries. A round of the
`main` conversation belongs to no scenario: its entries carry the role tag only, and it
recalls and forgets across all of them.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

import structlog
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from baton.agents.tools._sandbox import current_scenario
from baton.agents.tools.protocol import Tool, ToolOutcome
from baton.memory import MemoryEntry, MemorySource, MemoryStore

MAX_CONTENT_CHARS: Final = 4000
"""One entry is a finding, not a file: longer text belongs in a file the entry names."""
MAX_TAGS: Final = 8
MAX_RECALL: Final = 20
# A recalled entry's content is shown up to this many characters (the whole entry is in the
# store; one Recall result stays small however many entries it lists).
SHOWN_CHARS: Final = 1000
SCENARIO_PREFIX: Final = "scenario:"
ROLE_PREFIX: Final = "role:"
RESERVED_PREFIXES: Final = (SCENARIO_PREFIX, ROLE_PREFIX)

Tag = Annotated[
    str,
    StringConstraints(strip_whitespace=True, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:@/-]{0,63}$"),
]


def scenario_tag(scenario: str) -> str:
    """The tag of a scenario's entries: its base name (`name@2` shares `name`'s memory)."""
    return f"{SCENARIO_PREFIX}{scenario.partition('@')[0]}"


def role_tag(role: str) -> str:
    """The tag of the entries an agent stored."""
    return f"{ROLE_PREFIX}{role}"


def _conversation() -> str | None:
    # Bound by the agent loop for the round (with the scenario): the entry's provenance.
    value = structlog.contextvars.get_contextvars().get("conversation")
    return value if isinstance(value, str) else None


def entry_line(entry: MemoryEntry, *, score: float | None = None) -> str:
    """One entry as a line for the model: id, tags, when, then its content (clipped)."""
    content = " ".join(entry.content.split())
    if len(content) > SHOWN_CHARS:
        content = content[:SHOWN_CHARS] + f"[... {len(content) - SHOWN_CHARS} chars more]"
    when = str(entry.created_at)[:19]
    scored = f" score {score:.2f}" if score is not None else ""
    return f"- [{entry.id}] ({', '.join(entry.tags)}; {when}{scored}) {content}"


class RememberInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(
        min_length=1,
        max_length=MAX_CONTENT_CHARS,
        description="what to remember: one finding, decision or fix, self-contained, in a "
        f"few sentences (at most {MAX_CONTENT_CHARS} characters; name files by path)",
    )
    tags: list[Tag] = Field(
        default_factory=list,
        max_length=MAX_TAGS,
        description="extra tags to find it by, e.g. 'topic:dates' (the scenario and your "
        "role are added for you)",
    )

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content is blank; write what to remember")
        return value

    @field_validator("tags")
    @classmethod
    def _not_reserved(cls, value: list[str]) -> list[str]:
        reserved = [tag for tag in value if tag.startswith(RESERVED_PREFIXES)]
        if reserved:
            raise ValueError(
                f"tags {', '.join(reserved)} are set by the runtime; leave out tags starting "
                f"with {' or '.join(RESERVED_PREFIXES)}"
            )
        return list(dict.fromkeys(value))


class Remember:
    """Store one entry in long-term memory, tagged with the scenario and the role."""

    name = "Remember"
    description = (
        "Store a finding in long-term memory, where later rounds, iterations and runs of "
        "this scenario can Recall it: what failed and why, what fixed it, a decision and its "
        "reason. Keep each entry short and self-contained; name files by path instead of "
        "copying them. The scenario and your role are tagged automatically. Returns the "
        "entry's id."
    )
    input_model = RememberInput

    def __init__(self, store: MemoryStore, role: str) -> None:
        self._store = store
        self._role = role

    @property
    def input_schema(self) -> dict[str, Any]:
        return RememberInput.model_json_schema()

    async def run(self, args: RememberInput) -> ToolOutcome:
        scenario = current_scenario()
        tags = [*([scenario_tag(scenario)] if scenario else []), role_tag(self._role)]
        tags += [tag for tag in args.tags if tag not in tags]
        entry = await self._store.remember(
            args.content.strip(),
            tags=tuple(tags),
            source=MemorySource(agent=self._role, conversation=_conversation()),
        )
        return ToolOutcome(f"remembered {entry.id} (tags: {', '.join(entry.tags)})")


class RecallInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(
        min_length=1, max_length=500, description="what to look for, in a few keywords"
    )
    limit: int | None = Field(
        None, ge=1, le=MAX_RECALL, description="how many entries at most (default: configured)"
    )
    tags: list[Tag] = Field(
        default_factory=list,
        max_length=MAX_TAGS,
        description="only entries with all of these tags, e.g. 'kind:finding'",
    )
    scope: Literal["scenario", "all"] = Field(
        "scenario",
        description="scenario: this scenario's entries (every run of it); all: every scenario's",
    )

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query is blank; give a few keywords")
        return value


class Recall:
    """Search long-term memory; by default within the scenario's entries."""

    name = "Recall"
    description = (
        "Search long-term memory for entries relevant to a query: findings of earlier "
        "iterations and runs of this scenario (what failed, what fixed it) and what agents "
        "Remembered. Best matches first, each with its id and tags. scope='all' searches "
        "every scenario's entries."
    )
    input_model = RecallInput

    def __init__(self, store: MemoryStore, *, default_limit: int = 5) -> None:
        self._store = store
        self._default_limit = default_limit

    @property
    def input_schema(self) -> dict[str, Any]:
        return RecallInput.model_json_schema()

    async def run(self, args: RecallInput) -> ToolOutcome:
        scenario = current_scenario()
        tags = list(dict.fromkeys(args.tags))
        where = "every scenario"
        if scenario and args.scope == "scenario":
            tags.insert(0, scenario_tag(scenario))
            where = f"scenario {scenario_tag(scenario).removeprefix(SCENARIO_PREFIX)}"
        hits = await self._store.recall(
            args.query.strip(), tags=tuple(tags), limit=args.limit or self._default_limit
        )
        if not hits:
            return ToolOutcome(
                f"nothing in long-term memory matches {args.query.strip()!r} ({where}); try "
                "other keywords, fewer tags, or scope='all'"
            )
        lines = [f"{len(hits)} entries for {args.query.strip()!r} ({where}), best first:"]
        lines += [entry_line(hit.entry, score=hit.score) for hit in hits]
        return ToolOutcome("\n".join(lines))


class ForgetInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(
        min_length=1, max_length=200, description="the id of the entry, as Recall shows it"
    )


class Forget:
    """Remove one entry of the scenario's long-term memory by its id."""

    name = "Forget"
    description = (
        "Remove an entry from long-term memory by its id (as Recall shows it), when it is "
        "wrong or superseded. Only this scenario's entries can be forgotten here."
    )
    input_model = ForgetInput

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    @property
    def input_schema(self) -> dict[str, Any]:
        return ForgetInput.model_json_schema()

    async def run(self, args: ForgetInput) -> ToolOutcome:
        entry_id = args.id.strip()
        scenario = current_scenario()
        if scenario:
            own = await self._store.list(tags=(scenario_tag(scenario),))
            if not any(entry.id == entry_id for entry in own):
                return ToolOutcome(
                    f"no entry {entry_id!r} in this scenario's memory; Recall to see the ids "
                    "of its entries",
                    is_error=True,
                )
        forgotten = await self._store.forget(entry_id)
        return ToolOutcome(f"forgot {forgotten.id}")


def memory_tools(store: MemoryStore, role: str, *, recall_limit: int = 5) -> list[Tool[Any]]:
    """`Remember`, `Recall` and `Forget` over `store`, for the agent `role`."""
    return [Remember(store, role), Recall(store, default_limit=recall_limit), Forget(store)]
