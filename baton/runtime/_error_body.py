"""The control API's error body, `{"error": {"type", "message", "details"}}`, read with the
standard library alone: the async client rebuilds the baton error from its fields
(`_error_wire.rebuild_error`), and `baton tell` and `baton ask` print its message without
loading pydantic or the error tree (docs/architecture.md, "What a command imports").
"""

from __future__ import annotations

from typing import Any, NamedTuple

_REQUIRED = frozenset({"type", "message"})
_FIELDS = _REQUIRED | {"details"}


class ErrorFields(NamedTuple):
    """The fields of an error body: the baton error class's name, its message (which says
    what to do) and its attributes."""

    type: str
    message: str
    details: dict[str, Any]


def error_fields(body: Any) -> ErrorFields | None:
    """The fields of `body` (decoded JSON) if it is an error body, or None.

    As strict as `_error_wire.ErrorBody`, the model the server writes it with (no other key,
    each field of its type): what a client cannot read as one it reports as an unexpected
    body instead."""
    if not isinstance(body, dict) or body.keys() != {"error"}:
        return None
    error = body["error"]
    if not isinstance(error, dict) or not _REQUIRED <= error.keys() <= _FIELDS:
        return None
    kind, message, details = error["type"], error["message"], error.get("details", {})
    if not (isinstance(kind, str) and isinstance(message, str) and isinstance(details, dict)):
        return None
    return ErrorFields(kind, message, details)


def unexpected_body(status: int, body: Any) -> str:
    """What a client says of an error response that is not an error body."""
    return f"the runtime answered HTTP {status} with an unexpected body: {body!r:.300}"
