"""Baton errors over HTTP: which status each one gets, its JSON body, and back again."""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from baton import errors
from baton.errors import (
    BatonError,
    DiskFullFailure,
    FileTooLargeFailure,
    RuntimeFailure,
    UsageError,
)
from baton.mailboxes.errors import InvalidMessageError, MailboxFullError
from baton.runtime._error_body import error_fields, unexpected_body
from baton.runtime.errors import (
    ActorDeadError,
    ActorExistsError,
    AskTimeoutError,
    HandlerFailedError,
    RemoteFailure,
    UnhandledMessageError,
    UnknownActorError,
)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorDetail(_Body):
    """What went wrong, as an error response carries it."""

    type: str = Field(description="the baton error class, e.g. `UnknownActorError`")
    message: str = Field(description="what went wrong and what to do about it")
    details: dict[str, Any] = Field(
        default_factory=dict, description="the error's attributes (actor, timeout, cause...)"
    )


class ErrorBody(_Body):
    """Every error response: `{"error": {"type": ..., "message": ...}}`."""

    error: ErrorDetail


# By meaning (docs/architecture.md, "A message, from `baton tell` to a handler and back"):
# 404 names something that does not exist, 409 a request the current state refuses, 422 a
# message that is not one the actor takes; 400 is left for a refusal of the handler's own.
# Looked up along the error's MRO, so a subclass gets its parent's status unless listed. The
# kernel's errors are here; the layers above register theirs (`register_status`).
_STATUS: dict[type[BatonError], int] = {
    UnknownActorError: 404,
    InvalidMessageError: 422,
    UnhandledMessageError: 422,
    ActorExistsError: 409,
    ActorDeadError: 409,
    HandlerFailedError: 502,
    MailboxFullError: 503,
    DiskFullFailure: 507,
    FileTooLargeFailure: 507,  # Insufficient Storage too, but no wait ends it
    AskTimeoutError: 504,
    UsageError: 400,
    RuntimeFailure: 500,
}


def register_status(error: type[BatonError], status: int) -> None:
    """Report `error` (and its subclasses not registered themselves) with `status`."""
    _STATUS[error] = status


_PLAIN = (str, int, float, bool, type(None))


def status_for(error: BatonError) -> int:
    """The HTTP status that reports `error`."""
    if isinstance(error, HandlerFailedError) and isinstance(error.cause, UsageError):
        # The handler refused the request itself (say, an unknown scenario): the caller's to
        # fix, with the status of the refusal.
        return status_for(error.cause)
    for klass in type(error).__mro__:
        status = _STATUS.get(klass)
        if status is not None:
            return status
    return 500


def _detail_value(value: Any) -> Any:
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, BaseException):
        return {"type": type(value).__name__, "message": str(value)}
    if isinstance(value, list | tuple) and all(isinstance(item, _PLAIN) for item in value):
        return list(value)
    return str(value)


def error_body(error: BatonError) -> ErrorBody:
    """`{"error": {"type", "message", "details"}}` for `error`, details from its attributes."""
    details = {
        key: _detail_value(value) for key, value in vars(error).items() if not key.startswith("_")
    }
    return ErrorBody(
        error=ErrorDetail(type=type(error).__name__, message=str(error), details=details)
    )


@cache
def _known_errors() -> dict[str, type[BatonError]]:
    # Every name `baton.errors` re-exports, each layer's module imported on first use: the
    # error another process raised may be one this process never imported itself.
    known: dict[str, type[BatonError]] = {}
    for name in errors.__all__:
        value = getattr(errors, name)
        if isinstance(value, type) and issubclass(value, BatonError):
            known[value.__name__] = value
    return known


def rebuild_error(status: int, body: Any) -> BatonError:
    """The baton error a client raises for an error response (`status`, decoded `body`)."""
    detail = error_fields(body)
    if detail is None:
        kind: type[BatonError] = UsageError if status < 500 else RuntimeFailure
        return kind(unexpected_body(status, body))
    klass = _known_errors().get(detail.type) or (UsageError if status < 500 else RemoteFailure)
    # Built without __init__: the server's message already says what to do, and most
    # constructors would rebuild it from arguments the body carries only as details.
    error = klass.__new__(klass)
    Exception.__init__(error, detail.message)
    for key, value in detail.details.items():
        if key.isidentifier() and key != "cause":
            setattr(error, key, value)
    if isinstance(error, RemoteFailure) and klass is RemoteFailure:
        error.remote_type = detail.type
    cause = detail.details.get("cause")
    if isinstance(cause, dict):
        remote = RemoteFailure(
            f"{cause.get('type', 'Exception')}: {cause.get('message', '')}",
            str(cause.get("type", "Exception")),
        )
        error.cause = remote  # type: ignore[attr-defined]
        error.__cause__ = remote
    return error
