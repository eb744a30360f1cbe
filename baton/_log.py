"""The logger every module of baton takes (`log = get_logger(__name__)`), and the redaction
every line of baton's goes through.

A library is silent until the application configures logging (docs/architecture.md, "Where
the log lines go"): until structlog is configured, a line goes to the standard library's
logger of its module (`baton.runtime.runtime`, ...) as one readable line, and the `baton`
logger's `NullHandler` keeps it off the terminal unless the application has set `logging`
up. Once structlog is configured (by `baton run`'s `configure_logging`, by the application,
by a test's `capture_logs`) the lines go through that configuration, as any structlog
library's do, which baton never changes.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

_SECRET_ENV_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
_REDACTED = "[redacted]"

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}

# The standard library's convention for a library: without it, a record nobody handles
# reaches logging's "last resort" and its warnings are printed on stderr.
logging.getLogger("baton").addHandler(logging.NullHandler())


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


_line_context: list[Processor] = []


def add_line_context(processor: Processor) -> None:
    """Have `processor` add its fields to every line of baton's that lacks them, whatever
    configuration the line goes through (the runtime adds the actor and message it runs)."""
    if processor not in _line_context:
        _line_context.append(processor)


_FIELDS = structlog.processors.LogfmtRenderer(bool_as_flag=False)


def _render_line(logger: WrappedLogger, name: str, event_dict: EventDict) -> str:
    """`event key=value ...`, the traceback, if any, on the lines below."""
    event = str(event_dict.pop("event", ""))
    traceback = event_dict.pop("exception", None)
    fields = _FIELDS(logger, name, event_dict)
    line = f"{event} {fields}" if fields else event
    return f"{line}\n{traceback}" if traceback else line


def _to_structlog(name: str, values: dict[str, Any]) -> Any:
    """A logger of structlog's configuration, with baton's context and redaction added to
    its lines unless the configuration is baton's own (`configure_logging`), which has them."""
    processors = structlog.get_config()["processors"]
    if redact_secrets in processors:
        return structlog.get_logger(name, **values)
    # Before the last processor, the renderer: after it there is no event left to redact.
    own = [*_line_context, redact_secrets]
    return structlog.wrap_logger(
        None,
        processors=[*processors[:-1], *own, *processors[-1:]],
        logger_factory_args=(name,),
        **values,
    )


class BatonLogger:
    """What `get_logger` returns: structlog's logging methods, each line going where the
    application asked for it (see the module's docstring)."""

    __slots__ = ("_name", "_stdlib", "_values")

    def __init__(self, name: str, values: dict[str, Any]) -> None:
        self._name = name
        self._values = values
        self._stdlib = logging.getLogger(name)

    def debug(self, event: str, **fields: Any) -> None:
        """Log `event` at debug level."""
        self._log("debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        """Log `event` at info level."""
        self._log("info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        """Log `event` at warning level."""
        self._log("warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        """Log `event` at error level."""
        self._log("error", event, fields)

    def exception(self, event: str, **fields: Any) -> None:
        """Log `event` at error level with the exception being handled."""
        fields.setdefault("exc_info", True)
        self._log("error", event, fields)

    def _log(self, method: str, event: str, fields: dict[str, Any]) -> None:
        if structlog.is_configured():
            logger = _to_structlog(self._name, self._values)
        elif self._stdlib.isEnabledFor(_LEVELS[method]):
            processors: list[Processor] = [
                structlog.contextvars.merge_contextvars,
                *_line_context,
                structlog.processors.format_exc_info,
                redact_secrets,
                _render_line,
            ]
            logger = structlog.stdlib.BoundLogger(self._stdlib, processors, self._values)
        else:
            return
        getattr(logger, method)(event, **fields)


def get_logger(name: str, **values: Any) -> BatonLogger:
    """The logger of module `name` (pass `__name__`), its lines carrying `values`."""
    return BatonLogger(name, values)
