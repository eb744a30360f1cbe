"""Words, tags and ids as every memory backend sees them (docs/memory.md, "Ranking")."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Sequence

from baton.memory.errors import MemoryInputError

# A word is a run of letters, digits or underscores in any script, as FTS5's unicode61
# tokenizer splits text; CJK text without spaces is one word per run (docs/memory.md, "Ranking").
_WORDS = re.compile(r"\w+")
MAX_TAG_CHARS = 64
_BAD_TAG = re.compile(r"[\s,\x00-\x1f\x7f]")


def words(text: str) -> list[str]:
    """The words of `text`, case-folded, in order (repeats kept)."""
    return _WORDS.findall(text.casefold())


def query_terms(query: str) -> list[str]:
    """The distinct words of a query, in order of first appearance."""
    return list(dict.fromkeys(words(query)))


def check_tags(tags: Sequence[str]) -> tuple[str, ...]:
    """The tags without repeats, in order; raises MemoryInputError for a bad one.

    A tag is 1-64 characters with no whitespace, comma or control character: the command
    line passes several as one comma-separated value."""
    if isinstance(tags, str):
        raise MemoryInputError(f"tags must be a list of strings, not the string {tags!r}")
    for tag in tags:
        if not isinstance(tag, str) or not tag or len(tag) > MAX_TAG_CHARS or _BAD_TAG.search(tag):
            raise MemoryInputError(
                f"bad memory tag {tag!r}: a tag is 1-{MAX_TAG_CHARS} characters without "
                "spaces, commas or control characters"
            )
    return tuple(dict.fromkeys(tags))


def new_entry_id() -> str:
    """A fresh entry id: `m-` and 12 random hex digits."""
    return "m-" + secrets.token_hex(6)


# The postings a search scores at most before it leaves out its commonest words: scoring
# every entry that holds "the" costs time in proportion to the store, and such words barely
# move a BM25 ranking (docs/memory.md, "Ranking").
MATCH_BUDGET = 5000


def selective_terms(
    terms: Sequence[str], frequency: Callable[[str], int], budget: int = MATCH_BUDGET
) -> list[str]:
    """The rarest of `terms` whose entries (by `frequency`) add up to at most `budget`, in
    the order given; empty when even the rarest is commoner than that."""
    chosen: set[str] = set()
    total = 0
    for term in sorted(terms, key=frequency):
        total += frequency(term)
        if total > budget:
            break
        chosen.add(term)
    return [term for term in terms if term in chosen]
