"""A small in-memory BM25 index (Okapi BM25, k1 = 1.2, b = 0.75) for the JSONL backend.

Written here rather than taken from a library: the backend adds and removes one entry at a
time, which an inverted index of dicts does in O(words), and it keeps baton free of numpy
and scipy (docs/memory.md, "jsonl").
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Sequence

from baton.memory._text import selective_terms

K1 = 1.2
B = 0.75


class Bm25Index:
    """Documents by key, their word counts, and the postings of each word."""

    def __init__(self) -> None:
        self._postings: dict[str, dict[str, int]] = {}
        self._lengths: dict[str, int] = {}
        self._words: dict[str, tuple[str, ...]] = {}
        self._total_length = 0

    def __len__(self) -> int:
        return len(self._lengths)

    def add(self, key: str, words: Sequence[str]) -> None:
        """Index the document `key` made of `words` (replacing one of the same key)."""
        self.remove(key)
        counts = Counter(words)
        for word, count in counts.items():
            self._postings.setdefault(word, {})[key] = count
        self._words[key] = tuple(counts)
        self._lengths[key] = len(words)
        self._total_length += len(words)

    def remove(self, key: str) -> None:
        """Forget the document `key`, if indexed."""
        length = self._lengths.pop(key, None)
        if length is None:
            return
        self._total_length -= length
        for word in self._words.pop(key):
            docs = self._postings[word]
            del docs[key]
            if not docs:
                del self._postings[word]

    def scores(
        self, terms: Sequence[str], among: Collection[str] | None = None, limit: int = 5
    ) -> dict[str, float]:
        """The BM25 score of the documents holding the query's words (optionally only those
        in `among`).

        Only the rarest words whose documents add up to `MATCH_BUDGET` are matched; when
        every word is commoner than that, the newest `limit` documents holding all of them
        (else any of them) are scored (docs/memory.md, "Ranking")."""
        postings = self._postings
        terms = [term for term in dict.fromkeys(terms) if term in postings]
        if not terms:
            return {}
        chosen = selective_terms(terms, lambda term: len(postings[term]))
        if chosen:
            candidates: set[str] = set().union(*(postings[term].keys() for term in chosen))
            if among is not None:
                candidates.intersection_update(among)
        else:
            candidates = self._newest_holding(terms, among, limit)
            chosen = terms
        count = len(self._lengths)
        average = self._total_length / count or 1.0
        scores = dict.fromkeys(candidates, 0.0)
        for term in chosen:
            docs = postings[term]
            idf = math.log((count - len(docs) + 0.5) / (len(docs) + 0.5) + 1.0)
            for key in candidates:
                tf = docs.get(key)
                if tf:
                    norm = K1 * (1 - B + B * self._lengths[key] / average)
                    scores[key] += idf * tf * (K1 + 1) / (tf + norm)
        return scores

    def _newest_holding(
        self, terms: Sequence[str], among: Collection[str] | None, limit: int
    ) -> set[str]:
        """Up to `limit` of the newest documents holding every term, then any of them.

        A posting list is a dict in the order its documents were added, oldest first, so
        walking the rarest term's backwards meets the newest first."""
        lists = sorted((self._postings[term] for term in terms), key=len)
        found: set[str] = set()
        for key in reversed(lists[0]):
            if (among is None or key in among) and all(key in docs for docs in lists[1:]):
                found.add(key)
                if len(found) == limit:
                    return found
        for docs in lists:
            for key in reversed(docs):
                if len(found) == limit:
                    return found
                if among is None or key in among:
                    found.add(key)
        return found
