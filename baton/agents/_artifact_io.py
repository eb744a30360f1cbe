"""Atomic file writes for the agents' and the pipeline's files: the storage layer's helper
(`baton.storage._atomic_file`, docs/architecture.md, "storage/"), under the names they have
always imported."""

from __future__ import annotations

from baton.storage._atomic_file import (
    LEFTOVER_AGE_S,
    TEMP_SUFFIX,
    is_write_leftover,
    remove_write_leftovers,
    temp_name,
    write_at,
    write_atomic,
)

__all__ = [
    "LEFTOVER_AGE_S",
    "TEMP_SUFFIX",
    "is_write_leftover",
    "remove_write_leftovers",
    "temp_name",
    "write_at",
    "write_atomic",
]
