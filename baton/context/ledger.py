"""The key-fact ledger: paths, ids and the other identifiers no compaction may lose.

Whatever the runtime registers while an agent works (the paths of a handoff package, the
files the agent wrote, the ids it was given, the identifiers its patterns find in user
messages and tool results) is merged verbatim into every summary a compaction produces,
LLM-written or extractive. A model that forgets a path in its summary cannot make the agent
forget it.

The ledger is capped in tokens when it is shown (docs/context.md, "Key-fact ledger"): past
the cap, facts found in text go first (oldest first; those of the built-in kinds before
those of the agent's own patterns), then the other ids, then paths, the package and written
paths last. What a request shows is a pure function of the facts, so a replay shows the
same. What the conversation keeps is bounded too: each compaction prunes the facts found in
text to the newest `LEDGER_MAX_PATTERN_FACTS`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from baton.context.tokens import estimate_text_tokens

FactKind = Literal["path", "id", "hash", "datetime", "offset", "url", "email", "amount"]
"""What a fact is. A ledger journaled before the other kinds existed holds only `path` and
`id`, which still load."""
FACT_KINDS: tuple[FactKind, ...] = get_args(FactKind)
PATH_KINDS: frozenset[str] = frozenset({"path", "url"})
"""The kinds a summary carries under `key_paths` (places to read again); the others go
under `key_ids`."""
FactOrigin = Literal["pattern", "builtin"]
"""How a fact was found in a user message or a tool result when it was not registered by
name: `pattern` when one of the agent's own patterns matched it (the only origin a ledger
journaled before the built-in kinds holds), `builtin` when a built-in kind did. Both are
the first to go past the cap, `builtin` before `pattern`."""

LEDGER_MAX_TOKENS = 2000
"""The default cap: a few hundred paths and ids, small next to any compaction threshold."""
LEDGER_MAX_PATTERN_FACTS = 512
"""How many facts found in text a conversation keeps past a compaction, the newest: about
four times what the default cap shows (such a fact shows in about 12 tokens), so the
kept ones are always a superset of the shown ones; with values of at most 200 characters
it also bounds the bytes (docs/context.md, "Key-fact ledger")."""
_FACT_FRAMING_TOKENS = 4  # the JSON key, quotes and separators around a value


class KeyFact(BaseModel):
    """One registered fact: a path, an id or another identifier, with an optional label and
    where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: FactKind
    value: str = Field(min_length=1)
    label: str | None = None
    source: str | None = Field(None, description="what registered it: a tool, a handoff type")
    origin: FactOrigin | None = Field(
        None, description="`pattern` or `builtin` when a pattern found it in text"
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
        """What goes first past the cap: lower first (found by a built-in kind, found by the
        agent's own pattern, other ids, paths)."""
        if self.origin is not None:
            return 0 if self.origin == "builtin" else 1
        return 3 if self.kind in PATH_KINDS else 2


class KeyFactLedger:
    """The registered facts, in registration order, each once (same kind and value; a fact
    found in text also not when its value is registered already, whatever its kind)."""

    def __init__(self, facts: Iterable[KeyFact] = ()) -> None:
        self._facts: dict[tuple[str, str], KeyFact] = {}
        self._values: set[str] = set()
        # Facts already registered (a snapshot's, a pruned ledger's) are taken as they are,
        # so this ledger lines up with the list they came from.
        for fact in facts:
            self._insert(fact)

    def _insert(self, fact: KeyFact) -> bool:
        key = (fact.kind, fact.value)
        if key in self._facts:
            return False
        self._facts[key] = fact
        self._values.add(fact.value)
        return True

    def add(self, facts: Iterable[KeyFact]) -> list[KeyFact]:
        """Register `facts`; return those that were new."""
        added = []
        for fact in facts:
            if fact.origin is not None and fact.value in self._values:
                continue
            if self._insert(fact):
                added.append(fact)
        return added

    def prune(self, max_pattern_facts: int = LEDGER_MAX_PATTERN_FACTS) -> list[int] | None:
        """Keep every fact registered by name and the newest `max_pattern_facts` found in
        text; the indexes (in registration order) of the facts kept, or None when all are.

        The oldest go because the cap shows the newest first: what is pruned is what no
        request would show at the default cap anyway (docs/context.md, "Key-fact ledger").
        """
        facts = list(self._facts.values())
        found = [i for i, fact in enumerate(facts) if fact.origin is not None]
        if len(found) <= max_pattern_facts:
            return None
        dropped = set(found[: len(found) - max_pattern_facts])
        kept = [i for i in range(len(facts)) if i not in dropped]
        self._facts = {}
        self._values = set()
        for i in kept:
            self._insert(facts[i])
        return kept

    def __iter__(self) -> Iterator[KeyFact]:
        return iter(self._facts.values())

    def __len__(self) -> int:
        return len(self._facts)

    def __contains__(self, value: object) -> bool:
        return isinstance(value, str) and value in self._values

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
        """Add each fact the summary lacks: paths and URLs to `key_paths`, ids and the other
        kinds to `key_ids`; return how many facts the cap left out.

        A fact counts as present when its exact value already appears there; otherwise it is
        added under its label (or its value), never overwriting what the model wrote. With
        `start` and `limit`, only the facts registered from the `start`-th to before the
        `limit`-th are merged; with `max_tokens`, the facts `shown` keeps under that cap.
        """
        facts, dropped = self.shown(start=start, limit=limit, max_tokens=max_tokens)
        sections: dict[str, _Section] = {}
        for fact in facts:
            name = "key_paths" if fact.kind in PATH_KINDS else "key_ids"
            section = sections.get(name)
            if section is None:
                target = summary.get(name)
                if not isinstance(target, MutableMapping):
                    target = {} if target is None else {"previous": str(target)}
                    summary[name] = target
                section = sections[name] = _Section(target)
            section.add(fact.label or fact.value, fact.value)
        return dropped


class _Section:
    """One section of a summary being merged into: the values it holds and the next free
    `#n` per key, so merging hundreds of facts under the same label stays linear."""

    def __init__(self, target: MutableMapping[str, Any]) -> None:
        self.target = target
        self.values = {v for v in target.values() if isinstance(v, str)}
        self.next: dict[str, int] = {}

    def add(self, wanted: str, value: str) -> None:
        if value in self.values:
            return
        key = wanted
        if key in self.target:
            n = self.next.get(wanted, 2)
            while f"{wanted}#{n}" in self.target:
                n += 1
            self.next[wanted] = n + 1
            key = f"{wanted}#{n}"
        self.target[key] = value
        self.values.add(value)


def path_facts(paths: Iterable[str], *, source: str | None = None) -> list[KeyFact]:
    """Facts for `paths` (blank entries ignored)."""
    return [KeyFact(kind="path", value=p, source=source) for p in paths if p.strip()]


def id_facts(
    ids: Iterable[str], *, source: str | None = None, origin: FactOrigin | None = None
) -> list[KeyFact]:
    """Facts for `ids` (blank entries ignored)."""
    return [KeyFact(kind="id", value=v, source=source, origin=origin) for v in ids if v.strip()]


def found_facts(
    found: Iterable[tuple[FactKind, str]],
    *,
    source: str | None = None,
    origin: FactOrigin = "builtin",
) -> list[KeyFact]:
    """Facts for (kind, value) pairs found in text, labelled with their kind (a summary shows
    `"hash#2": "9fceb02"`, the value once)."""
    return [
        KeyFact(kind=kind, value=value, label=kind, source=source, origin=origin)
        for kind, value in found
        if value.strip()
    ]
