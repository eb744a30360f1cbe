"""A deterministic toy embedder for the memory tests and bench: no model, no download.

Each word's character trigrams (with the word's edges marked) are hashed into `dimensions`
buckets and the vector is normalised, so texts sharing word pieces ("rotate", "rotation")
come out near each other. It knows nothing of meaning: a stand-in for a real embedder.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

_WORDS = re.compile(r"\w+")


class TrigramEmbedder:
    """Hashed character trigrams into `dimensions` floats, L2-normalised."""

    def __init__(self, dimensions: int = 64) -> None:
        self._dimensions = dimensions
        self.calls = 0

    @property
    def dimensions(self) -> int:
        """The length of every vector."""
        return self._dimensions

    def vector(self, text: str) -> list[float]:
        """The embedding of one text."""
        values = [0.0] * self._dimensions
        for word in _WORDS.findall(text.casefold()):
            marked = f"^{word}$"
            for start in range(max(1, len(marked) - 2)):
                gram = marked[start : start + 3].encode()
                digest = hashlib.blake2b(gram, digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self._dimensions
                sign = 1.0 if digest[4] & 1 else -1.0
                values[bucket] += sign
        norm = math.sqrt(sum(v * v for v in values)) or 1.0
        return [v / norm for v in values]

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text."""
        self.calls += 1
        return [self.vector(text) for text in texts]
