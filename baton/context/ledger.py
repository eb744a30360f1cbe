"""The key-fact ledger: paths and ids no compaction may lose.

Whatever the runtime registers while an agent works (the paths of a handoff package, the
files the agent wrote, the ids it was given) is merged verbatim into every summary a
compaction produces, LLM-written or extractive. A model that forgets a path in its summary
cannot make the agent forget it.

The ledger is capped in tokens when it is shown (docs/context.md, "Key-fact ledger"): past
the cap, pattern-matched ids go first (oldest first), then the other ids, then paths, the
package and written paths last. The journal keeps every fact; the cap only decides what a
request shows, as a pure function of the facts, so a replay shows the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from baton.context.tokens import estimate_text_tokens

FactKind = Literal["path", "id"]
FactOrigin = Literal["pattern"]
"""How a fact was found when it was not registered by name: `pattern` for an id a configured
pattern matched in a user message or a tool result (the first to go past the cap)."""

LEDGER_MAX_TOKENS = 2000
"""The default cap: a few hundred paths and ids, small next to any compaction threshold."""
_FACT_FRAMING_TOKENS = 4  # the JSON key, quotes and separators around a value


class KeyFact(BaseModel):
    """One registered fact: a path or an id, with an optional label and where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: FactKind
    value: str = Field(min_length=1)
    label: str | None = None
    source: str | None = Field(None, description="what registered it: a tool, a handoff type")
    origin: FactOrigin | None = Field(
        None, description="`pattern` when a configured pattern found it in text"
    )

    @property
    def tokens(self) -> int:
        """Raw estimate of the fact as a summary shows it (value twice at most: key + value)."""
        return (
            estimate_text_tokens(self.value)
            + _FACT_FRAMING_TOKENS
            + (estimate_text_tokens(self.label) if self.label else estimate_text_tokens(self.value))
        )

    @property
    def rank(self) -> int:
        """What goes first past the cap: lower first (pattern ids, ids, paths)."""
        if self.origin == "pattern":
            return 0
        return 1 if self.kind == "id" else 2


class KeyFactLedger:
    """The registered facts, in registration order, each once (same kind and value)."""

    def __init__(self, facts: Iterable[KeyFact] = ()) -> None:
        self._facts: dict[tuple[str, str], KeyFact] = {}
        self.add(facts)

    def add(self, facts: Iterable[KeyFact]) -> list[KeyFact]:
        """Register `facts`; return those that were new."""
        added = []
        for fact in facts:
            key = (fact.kind, fact.value)
            if key not in self._facts:
                self._facts[key] = fact
                added.append(fact)
        return added

    def __iter__(self) -> Iterator[KeyFact]:
        return iter(self._facts.values())

    def __len__(self) -> int:
        return len(self._facts)

    def __contains__(self, value: object) -> bool:
        return any(fact.value == value for fact in self._facts.values())

    @property
    def paths(self) -> list[str]:
        """Every registered path."""
        return [f.value for f in self._facts.values() if f.kind == "path"]

    @property
    def ids(self) -> list[str]:
        """Every registered id."""
        return [f.value for f in self._facts.values() if f.kind == "id"]

    def shown(
        self, *, start: int = 0, limit: int | None = None, max_tokens: int | None = None
    ) -> tuple[list[KeyFact], int]:
        """The facts a request shows, in registration order, and how many the cap left out.

        `limit` takes the first `limit` facts registered (a round pinned by thinking shows
        what its first thinking step saw), and `start` leaves out the first `start` of those
        (shown elsewhere already); `max_tokens` drops facts, lowest `rank` first and oldest
        first within a rank, until the rest fit.
        """
        facts = list(self._facts.values())[start:limit]
        if max_tokens is None:
            return facts, 0
        total = sum(fact.tokens for fact in facts)
        if total <= max_tokens:
            return facts, 0
        dropped: set[int] = set()
        for index in sorted(range(len(facts)), key=lambda i: (facts[i].rank, i)):
            if total <= max_tokens:
                break
            dropped.add(index)
            total -= facts[index].tokens
        return [f for i, f in enumerate(facts) if i not in dropped], len(dropped)

    def merge_into(
        self,
        summary: MutableMapping[str, Any],
        *,
        start: int = 0,
        limit: int | None = None,
        max_tokens: int | None = None,
    ) -> int:
        """Add each fact the summary lacks: paths to `key_paths`, ids to `key_ids`; return
        how many facts the cap left out.

        A fact counts as present when its exact value already appears there; otherwise it is
        added under its label (or its value), never overwriting what the model wrote. With
        `start` and `limit`, only the facts registered from the `start`-th to before the
        `limit`-th are merged; with `max_tokens`, the facts `shown` keeps under that cap.
        """
        facts, dropped = self.shown(start=start, limit=limit, max_tokens=max_tokens)
        for fact in facts:
            section = "key_paths" if fact.kind == "path" else "key_ids"
            target = summary.get(section)
            if not isinstance(target, MutableMapping):
                target = {} if target is None else {"previous": str(target)}
                summary[section] = target
            if fact.value in target.values():
                continue
            target[_free_key(target, fact.label or fact.value)] = fact.value
        return dropped


def _free_key(target: MutableMapping[str, Any], wanted: str) -> str:
    if wanted not in target:
        return wanted
    n = 2
    while f"{wanted}#{n}" in target:
        n += 1
    return f"{wanted}#{n}"


def path_facts(paths: Iterable[str], *, source: str | None = None) -> list[KeyFact]:
    """Facts for `paths` (blank entries ignored)."""
    return [KeyFact(kind="path", value=p, source=source) for p in paths if p.strip()]


def id_facts(
    ids: Iterable[str], *, source: str | None = None, origin: FactOrigin | None = None
) -> list[KeyFact]:
    """Facts for `ids` (blank entries ignored)."""
    return [KeyFact(kind="id", value=v, source=source, origin=origin) for v in ids if v.strip()]
