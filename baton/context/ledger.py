"""The key-fact ledger: paths and ids no compaction may lose.

Whatever the runtime registers while an agent works (the paths of a handoff package, the
files the agent wrote, the ids it was given) is merged verbatim into every summary a
compaction produces, LLM-written or extractive. A model that forgets a path in its summary
cannot make the agent forget it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

FactKind = Literal["path", "id"]


class KeyFact(BaseModel):
    """One registered fact: a path or an id, with an optional label and where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: FactKind
    value: str = Field(min_length=1)
    label: str | None = None
    source: str | None = Field(None, description="what registered it: a tool, a handoff type")


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

    def merge_into(
        self, summary: MutableMapping[str, Any], *, limit: int | None = None
    ) -> MutableMapping[str, Any]:
        """Add each fact the summary lacks: paths to `key_paths`, ids to `key_ids`.

        A fact counts as present when its exact value already appears there; otherwise it is
        added under its label (or its value), never overwriting what the model wrote. With
        `limit`, only the first `limit` facts registered are merged.
        """
        facts = list(self._facts.values())
        for fact in facts if limit is None else facts[:limit]:
            section = "key_paths" if fact.kind == "path" else "key_ids"
            target = summary.get(section)
            if not isinstance(target, MutableMapping):
                target = {} if target is None else {"previous": str(target)}
                summary[section] = target
            if fact.value in target.values():
                continue
            target[_free_key(target, fact.label or fact.value)] = fact.value
        return summary


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
