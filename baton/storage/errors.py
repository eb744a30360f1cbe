"""The storage layer's errors: a malformed path, an object that is not there, a store that
cannot be used.

Each derives from `BatonError` (`baton.errors`, which re-exports them for users); catch
`StorageError` for any of them (docs/storage.md, "Errors")."""

from __future__ import annotations

from baton.errors import BatonError, RuntimeFailure, UsageError


class StorageError(BatonError):
    """Raised by a store (`baton.storage`) for any of its errors; the kinds below say
    whether the path, the object or the store itself is at fault."""


class StoragePathError(StorageError, UsageError):
    """Raised when a path given to a store is not a relative `/`-separated key: empty,
    absolute, with a `..`, an empty part, a backslash or a control character."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(
            f"storage path {path!r} {problem}; give a relative path such as "
            "'scenarios/NAME/design.md'"
        )


class ObjectNotFoundError(StorageError, UsageError):
    """Raised when an object is read that the store does not hold (or, `baton pull`, a
    folder in which it holds none)."""

    def __init__(self, path: str, where: str, fix: str = "") -> None:
        self.path = path
        self.where = where
        super().__init__(f"{where} holds no object {path!r}" + (f" — {fix}" if fix else ""))


class StorageFailure(StorageError, RuntimeFailure):
    """Raised when a store cannot be used: nothing answers at its endpoint, it refuses the
    credentials, its bucket is missing, or a local file is in the way; the message names the
    store and what to check."""
