"""A command's logging set-up is undone as it was found, as `main()` also runs in process."""

from __future__ import annotations

import structlog

from baton.server._command_logging import CommandLogging


def test_restore_leaves_an_unconfigured_structlog_unconfigured() -> None:
    """After a command in a program that never configured structlog, structlog is
    unconfigured again, so the runtime's lines go back to the silent standard `logging`
    (docs/architecture.md, "Where the log lines go")."""
    structlog.reset_defaults()
    logs = CommandLogging("new", None)
    logs.configure()
    logs.restore()
    assert not structlog.is_configured()
