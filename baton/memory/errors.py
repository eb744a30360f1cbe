"""Long-term memory's errors: bad input, an unknown entry, a damaged store file, a missing extra.

Each derives from `BatonError` (`baton.errors`, which re-exports them for users)."""

from __future__ import annotations

from baton.errors import StateFileError, UsageError


class MemoryInputError(UsageError):
    """Raised when something asked of long-term memory is malformed: empty or oversized
    content, a bad tag, a limit below one (docs/memory.md)."""


class UnknownMemoryError(UsageError):
    """Raised when a long-term memory entry is asked for by an id the store does not hold."""

    def __init__(self, entry_id: str) -> None:
        self.entry_id = entry_id
        super().__init__(
            f"no memory entry with id {entry_id!r} — `baton memory list` shows the ids"
        )


class MemoryFileError(StateFileError):
    """Raised when the long-term memory store's file is damaged beyond what baton repairs
    by itself (docs/memory.md, "Files")."""


class MissingExtraError(UsageError):
    """Raised when a feature needs an optional dependency that is not installed."""

    def __init__(self, feature: str, package: str, extra: str) -> None:
        self.feature = feature
        self.package = package
        self.extra = extra
        super().__init__(
            f"{feature} needs the optional package {package!r}: pip install 'baton[{extra}]'"
        )
