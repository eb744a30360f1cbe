"""Searching the FTS5 index within a time bound: which query words to match, and how.

FTS5 scores every entry a query matches before it can sort them, so a query holding a word
found in most entries ("the", a project's name) costs time in proportion to the store. The
search therefore looks up how many entries hold each query word (from the index's own
vocabulary, cached per connection) and matches only the rarest words whose entries add up
to `MATCH_BUDGET`: the words that decide a BM25 ranking anyway. When every word is commoner
than that, it takes the newest entries holding all of them, which FTS5 finds without scoring
the rest (docs/memory.md, "Ranking").
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from baton.memory._text import selective_terms

# The tokenizer of `memory_fts` (baton/memory/_sqlite_db.py), to stem query words alike.
_TOKENIZER = "porter unicode61 remove_diacritics 2"
# The vocabulary cache is read again once the store has grown by a tenth.
_REFRESH_GROWTH = 1.1

_TEMP_TABLES = f"""
CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_vocab USING fts5vocab(main, memory_fts, 'row');
CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_query USING fts5(w, tokenize='{_TOKENIZER}');
CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_query_terms
    USING fts5vocab(temp, memory_query, 'instance');
"""


def quoted(term: str) -> str:
    """`term` as an FTS5 string: never read as query syntax."""
    return '"' + term.replace('"', '""') + '"'


class FtsPlanner:
    """Chooses the MATCH expression of a query on one connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._ready = False
        self._frequencies: dict[str, int] = {}
        self._seen_top = -1

    def _prepare(self) -> None:
        if not self._ready:
            self._db.executescript(_TEMP_TABLES)
            self._ready = True

    def _stems(self, terms: Sequence[str]) -> dict[str, list[str]]:
        """Each term's tokens as the index's tokenizer makes them (porter stems)."""
        db = self._db
        db.execute("DELETE FROM temp.memory_query")
        db.executemany(
            "INSERT INTO temp.memory_query (rowid, w) VALUES (?, ?)",
            list(enumerate(terms, start=1)),
        )
        stems: dict[str, list[str]] = {term: [] for term in terms}
        for doc, stem in db.execute("SELECT doc, term FROM temp.memory_query_terms"):
            stems[terms[int(doc) - 1]].append(str(stem))
        db.execute("DELETE FROM temp.memory_query")
        return stems

    def _entry_counts(self) -> dict[str, int]:
        top = int(
            self._db.execute("SELECT coalesce(max(rowid), 0) FROM memory_entries").fetchone()[0]
        )
        if self._seen_top < 0 or top > self._seen_top * _REFRESH_GROWTH + 100:
            self._frequencies = {
                str(term): int(docs)
                for term, docs in self._db.execute("SELECT term, doc FROM temp.memory_vocab")
            }
            self._seen_top = top
        return self._frequencies

    def forget_counts(self) -> None:
        """Read the vocabulary again at the next search (the index was rebuilt)."""
        self._seen_top = -1

    def plan(self, terms: Sequence[str]) -> tuple[str, bool] | None:
        """The MATCH expression for `terms`, and whether to rank it by BM25 (else: the
        newest entries holding every word); None when no term can match anything."""
        self._prepare()
        stems = self._stems(terms)
        terms = [term for term in terms if stems[term]]
        if not terms:
            return None
        counts = self._entry_counts()

        def frequency(term: str) -> int:
            return max(counts.get(stem, 0) for stem in stems[term])

        # A word the cached counts do not know is new since they were read (or matches
        # nothing): matching it costs little.
        known = [term for term in terms if frequency(term)]
        chosen = set(selective_terms(known, frequency))
        if chosen or not known:
            matched = [term for term in terms if term in chosen or not frequency(term)]
            return " OR ".join(quoted(term) for term in matched), True
        return " AND ".join(quoted(term) for term in known), False
