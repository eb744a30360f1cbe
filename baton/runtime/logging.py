"""structlog set-up: JSON lines, with the current actor and message bound to every line.

The lines go to a stream (stderr, for machines: `--log-format json`) or to the process log
file `.baton/logs/baton.jsonl` (`LogFile`), which `baton run` and `baton worker` write by
default so that a person's terminal shows the run, not its log (README.md, "Running baton").
Until something configures logging, baton's lines print nothing (`baton/_log.py`).
"""

from __future__ import annotations

import errno
import logging
import os
import sys
import threading
from contextvars import ContextVar, Token
from pathlib import Path
from typing import Any, TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

from baton._log import add_line_context
from baton._log import redact_secrets as redact_secrets  # noqa: PLC0414 - the token log's
from baton._private import private_dir, private_opener
from baton.mailboxes.envelope import Envelope

PROCESS_LOG_MAX_BYTES = 50 * 1024 * 1024
PROCESS_LOG_BACKUPS = 5


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


def current_envelope() -> Envelope | None:
    """The envelope of the message whose handler is running in this task, if any."""
    scope = _current_scope.get()
    return scope.envelope if scope else None


def add_message_context(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    """Add `actor` and `message_id` of the message being handled, unless already set."""
    scope = _current_scope.get()
    if scope is not None:
        event_dict.setdefault("actor", scope.actor)
        if scope.envelope is not None:
            event_dict.setdefault("message_id", scope.envelope.id)
    return event_dict


# Also on the lines that go through the application's logging, when baton is embedded
# (docs/architecture.md, "Where the log lines go").
add_line_context(add_message_context)


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


class LogFile:
    """JSON lines appended to a file made private (0600 in a 0700 directory) on its first line.

    Like the token log it is rotated between whole lines: before a line would take it past
    `max_bytes` it becomes `<name>.1` (`.1` becomes `.2`, and so on, `backups` kept). Writing
    never raises: logging must not fail the code that logs. A line the file cannot take (a
    full disk, a directory in the way) goes to stderr instead, with one `baton: warning:`
    line per spell of failures; the next line tries the file again.
    """

    def __init__(
        self,
        path: Path,
        *,
        max_bytes: int = PROCESS_LOG_MAX_BYTES,
        backups: int = PROCESS_LOG_BACKUPS,
    ) -> None:
        self.path = path
        self._max_bytes = max_bytes
        self._backups = backups
        self._fd: int | None = None
        self._size = 0
        self._failing = False
        # Lines come from the event loop and from worker threads (the SQLite mailbox's).
        self._lock = threading.Lock()

    def write(self, line: str) -> None:
        """Append one line (a newline is added)."""
        data = f"{line}\n".encode()
        with self._lock:
            try:
                self._append(data)
            except OSError as exc:
                self._fallback(data, exc)
            else:
                self._failing = False

    def close(self) -> None:
        """Close the file; a later line opens it again."""
        with self._lock:
            self._close()

    def _append(self, data: bytes) -> None:
        if self._fd is None:
            self._open()
        elif self._size > 0 and self._size + len(data) > self._max_bytes:
            self._rotate()
        assert self._fd is not None
        written = os.write(self._fd, data)
        self._size += written
        if written != len(data):
            raise OSError(errno.ENOSPC, "the line was cut short")

    def _open(self) -> None:
        private_dir(self.path.parent)
        self._fd = private_opener(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        self._size = os.fstat(self._fd).st_size

    def _rotate(self) -> None:
        self._close()
        for index in range(self._backups - 1, 0, -1):
            older = Path(f"{self.path}.{index}")
            if older.exists():
                older.replace(f"{self.path}.{index + 1}")
        self.path.replace(f"{self.path}.1")
        self._open()

    def _close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def _fallback(self, data: bytes, error: OSError) -> None:
        self._close()  # a fresh open next time: the directory may have been put right
        # sys.stderr looked up now: a terminal view may have redirected it meanwhile.
        if not self._failing:
            self._failing = True
            sys.stderr.write(
                f"baton: warning: cannot write the log file {self.path} "
                f"({error.strerror or error}); log lines go to stderr until it can be written\n"
            )
        sys.stderr.write(data.decode())
        sys.stderr.flush()


class _FileLogger:
    """The structlog 'logger' at the end of the pipeline when the lines go to a `LogFile`."""

    def __init__(self, file: LogFile) -> None:
        self._file = file

    def msg(self, message: str) -> None:
        self._file.write(message)

    log = debug = info = warn = warning = err = error = critical = exception = fatal = msg


class _StdlibToStructlog(logging.Handler):
    """Lines of libraries that log with the standard `logging` (uvicorn, the SDK) go where
    baton's go, as JSON lines, instead of to the terminal."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            logger = structlog.get_logger(record.name)
            logger.log(record.levelno, record.getMessage(), logger=record.name)
        except Exception:  # noqa: BLE001 - logging's own contract: report, never raise
            self.handleError(record)


def configure_logging(
    *, stream: TextIO | None = None, file: LogFile | None = None, level: str = "info"
) -> None:
    """Render every structlog line as one JSON object on `stream` (stderr by default), or
    into `file` when one is given; with a file, the standard library's log records (warnings
    and up) go there too. It configures structlog for the whole process, so an application
    with a structlog configuration of its own keeps that instead (docs/architecture.md, "Where
    the log lines go"). `structlog.reset_defaults()` (or configuring again) undoes it."""
    threshold = logging.getLevelNamesMapping()[level.upper()]
    stop_stdlib_forwarding()
    if file is not None:
        log_file = file

        def factory(*_: Any) -> _FileLogger:
            return _FileLogger(log_file)

        logger_factory: Any = factory
        logging.root.addHandler(_StdlibToStructlog())
    else:
        logger_factory = structlog.PrintLoggerFactory(stream or sys.stderr)
    structlog.configure(
        processors=[*shared_processors(), structlog.processors.JSONRenderer(ensure_ascii=False)],
        wrapper_class=structlog.make_filtering_bound_logger(threshold),
        logger_factory=logger_factory,
        cache_logger_on_first_use=False,
    )


def stop_stdlib_forwarding() -> None:
    """Undo `configure_logging(file=...)`'s hold on the standard library's log records."""
    for handler in [h for h in logging.root.handlers if isinstance(h, _StdlibToStructlog)]:
        logging.root.removeHandler(handler)
