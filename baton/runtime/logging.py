"""structlog set-up: JSON lines, with the current actor and message bound to every line."""

from __future__ import annotations

import logging
import os
import sys
from contextvars import ContextVar, Token
from typing import Any, TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

from baton.mailboxes.envelope import Envelope

_SECRET_ENV_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
_REDACTED = "[redacted]"


class MessageScope:
    """Which actor a task runs and which envelope it is handling right now.

    An actor's task sets the ContextVar to its scope once, at start; per message it only
    assigns `envelope`, which costs an attribute store instead of a ContextVar set and reset.
    Tasks a handler starts inherit the scope, and structured concurrency ends them before
    the handler returns, so they never see the next message's id.
    """

    __slots__ = ("actor", "envelope")

    def __init__(self, actor: str) -> None:
        self.actor = actor
        self.envelope: Envelope | None = None


_current_scope: ContextVar[MessageScope | None] = ContextVar("baton_message_scope", default=None)


def enter_scope(scope: MessageScope) -> Token[MessageScope | None]:
    """Bind `scope` to the running task (and the tasks it starts)."""
    return _current_scope.set(scope)


def current_actor() -> str | None:
    """The actor whose code is running in this task, if any."""
    scope = _current_scope.get()
    return scope.actor if scope else None


def add_message_context(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    """Add `actor` and `message_id` of the message being handled, unless already set."""
    scope = _current_scope.get()
    if scope is not None:
        event_dict.setdefault("actor", scope.actor)
        if scope.envelope is not None:
            event_dict.setdefault("message_id", scope.envelope.id)
    return event_dict


def _secrets() -> list[str]:
    return [v for k in _SECRET_ENV_VARS if (v := os.environ.get(k)) and len(v) >= 8]


def _scrub(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, _REDACTED)
        return value
    if isinstance(value, dict):
        return {k: _scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_scrub(v, secrets) for v in value)
    return value


def redact_secrets(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    """Replace any API key found anywhere in the event with a marker (defence in depth)."""
    secrets = _secrets()
    if not secrets:
        return event_dict
    return {k: _scrub(v, secrets) for k, v in event_dict.items()}


def shared_processors() -> list[Processor]:
    """The processors every baton log line goes through, before rendering."""
    return [
        structlog.contextvars.merge_contextvars,
        add_message_context,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
        structlog.processors.format_exc_info,
        redact_secrets,
    ]


def configure_logging(*, stream: TextIO | None = None, level: str = "info") -> None:
    """Render every structlog line as one JSON object on `stream` (stderr by default)."""
    threshold = logging.getLevelNamesMapping()[level.upper()]
    structlog.configure(
        processors=[*shared_processors(), structlog.processors.JSONRenderer(ensure_ascii=False)],
        wrapper_class=structlog.make_filtering_bound_logger(threshold),
        logger_factory=structlog.PrintLoggerFactory(stream or sys.stderr),
        cache_logger_on_first_use=False,
    )
