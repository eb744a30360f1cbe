"""Ids found by pattern: what the ledger registers from text (docs/context.md, "Key-fact
ledger").

An id that only appears in a user message or a tool result (a sample id in a report, a
ticket number in a prompt) has no field to register it by; the agent scans those texts with
its patterns and registers every match as an `id` fact of origin `pattern`. The patterns are
the defaults the agent is built with (the id formats of the handoff and artifact schemas)
plus the `fact_patterns` of its `[actors.<name>]` table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from baton.context.ledger import KeyFact, id_facts

MAX_MATCH_CHARS = 200
"""A longer match is not an id (a pattern too greedy for the text it met)."""


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


class FactPatterns:
    """Compiled id patterns; `facts(texts)` the ids they find, in order, each once."""

    def __init__(self, patterns: Iterable[str] = ()) -> None:
        self.patterns = tuple(dict.fromkeys(patterns))
        self._compiled = [compile_pattern(p) for p in self.patterns]

    def __bool__(self) -> bool:
        return bool(self._compiled)

    def find(self, text: str) -> list[str]:
        """The ids in `text`: each pattern's matches (group 1 when it has groups)."""
        found: dict[str, None] = {}
        for compiled in self._compiled:
            for match in compiled.finditer(text):
                value = match.group(1) if compiled.groups else match.group(0)
                if value and value.strip() and len(value) <= MAX_MATCH_CHARS:
                    found.setdefault(value.strip())
        return list(found)

    def facts(self, texts: Iterable[str], *, source: str | None = None) -> list[KeyFact]:
        """The ids in `texts` as ledger facts of origin `pattern`."""
        found: dict[str, None] = {}
        for text in texts:
            if text:
                for value in self.find(text):
                    found.setdefault(value)
        return id_facts(found, source=source, origin="pattern")
