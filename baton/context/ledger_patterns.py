"""Facts found by pattern: what the ledger registers from text (docs/context.md, "Key-fact
ledger").

An identifier that only appears in a user message or a tool result (a sample id in a
report, a ticket number in a prompt, a commit hash, a timestamp, a URL) has no field to
register it by; the agent scans those texts and registers what it finds. Two sources: the
agent's own regular expressions (the id formats of the handoff and artifact schemas, plus
the `fact_patterns` of its `[actors.<name>]` table), whose matches are ids unless a named
group says their kind (origin `pattern`), and the built-in kinds (`_fact_kinds`: ids,
hashes, dates and times, UTC offsets, paths, URLs, emails, amounts with units; origin
`builtin`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from baton.context._fact_kinds import scan
from baton.context.ledger import FACT_KINDS, FactKind, FactOrigin, KeyFact, found_facts

MAX_MATCH_CHARS = 200
"""A longer match is not an id (a pattern too greedy for the text it met)."""
MAX_FACTS_PER_TEXT = 64
"""The most facts one text registers, the first found: a tool result that lists thousands
of rows or log stamps is data, not a handful of facts to carry (docs/context.md, "Key-fact
ledger")."""


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """`pattern` compiled; ValueError saying why when it is not a usable regular expression."""
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{pattern!r} is not a valid regular expression: {exc}") from None
    if compiled.match(""):
        raise ValueError(f"{pattern!r} matches the empty string, so it would match anywhere")
    return compiled


def check_patterns(patterns: Sequence[str]) -> list[str]:
    """`patterns` if each compiles (the config's validator); ValueError naming the bad one."""
    for pattern in patterns:
        compile_pattern(pattern)
    return list(patterns)


def _group(compiled: re.Pattern[str]) -> tuple[FactKind, int | str]:
    """The kind a pattern's matches are and the group that holds them: a group named after a
    kind (`(?P<hash>...)`), else group 1 as an id when there is one, else the whole match."""
    for kind in FACT_KINDS:
        if kind in compiled.groupindex:
            return kind, kind
    return "id", 1 if compiled.groups else 0


class FactPatterns:
    """The built-in kinds and the configured patterns; `facts(texts)` what they find, in
    order, each value once."""

    def __init__(
        self, patterns: Iterable[str] = (), *, kinds: Iterable[FactKind] = FACT_KINDS
    ) -> None:
        self.patterns = tuple(dict.fromkeys(patterns))
        self.kinds: tuple[FactKind, ...] = tuple(k for k in FACT_KINDS if k in set(kinds))
        self._compiled = [compile_pattern(p) for p in self.patterns]
        self._groups = [_group(c) for c in self._compiled]

    def __bool__(self) -> bool:
        return bool(self._compiled or self.kinds)

    def find(self, text: str) -> list[str]:
        """The ids the configured patterns find in `text`: each pattern's matches (its kind's
        named group, else group 1 when it has groups)."""
        return [value for _, value in self._configured(text)]

    def _configured(self, text: str) -> list[tuple[FactKind, str]]:
        found: dict[str, FactKind] = {}
        for compiled, (kind, group) in zip(self._compiled, self._groups, strict=True):
            for match in compiled.finditer(text):
                value = match.group(group)
                if value and value.strip() and len(value) <= MAX_MATCH_CHARS:
                    found.setdefault(value.strip(), kind)
        return [(kind, value) for value, kind in found.items()]

    def scan(self, text: str) -> list[tuple[FactKind, str]]:
        """Every fact in `text`: the configured patterns' first, then the built-in kinds' in
        order of position; each value once, at most `MAX_FACTS_PER_TEXT`."""
        return [(kind, value) for kind, value, _ in self._scan(text)]

    def _scan(self, text: str) -> list[tuple[FactKind, str, FactOrigin]]:
        found: dict[str, tuple[FactKind, FactOrigin]] = {
            value: (kind, "pattern") for kind, value in self._configured(text)
        }
        if self.kinds:
            for _, kind, value in scan(text, self.kinds):
                if len(value) <= MAX_MATCH_CHARS:
                    found.setdefault(value, (kind, "builtin"))
        return [(kind, value, origin) for value, (kind, origin) in found.items()][
            :MAX_FACTS_PER_TEXT
        ]

    def facts(self, texts: Iterable[str], *, source: str | None = None) -> list[KeyFact]:
        """The facts in `texts` as ledger facts labelled with their kind, of origin `pattern`
        (a configured pattern's) or `builtin`."""
        found: dict[str, tuple[FactKind, FactOrigin]] = {}
        for text in texts:
            if text:
                for kind, value, origin in self._scan(text):
                    found.setdefault(value, (kind, origin))
        return [
            fact
            for value, (kind, origin) in found.items()
            for fact in found_facts([(kind, value)], source=source, origin=origin)
        ]
