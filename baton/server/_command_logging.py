"""structlog set up for one `baton` command: at once for the commands that log, on the first
line for the light ones, which import no structlog (nor rich, which structlog loads) so that
they start fast (docs/architecture.md, "What a command imports").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from baton.runtime.logging import LogFile

LIGHT_COMMANDS = frozenset(
    {
        "tell",
        "ask",
        "submit",
        "status",
        "show",
        "approve",
        "reject",
        "tail",
        "dead-letters",
        "stop",
        "pull",
    }
)
"""The commands that import no structlog: logging is set up for them only if the event loop
has something to log (`tests/server/test_cli_imports.py` holds them to it)."""


class CommandLogging:
    """JSON lines at `info` for `run` and `worker` (into `file`, the process log, when given),
    at `warning` on stderr for the others; put back as they were on `restore()`, as `main()`
    is also called in process (tests, embedding scripts)."""

    def __init__(self, command: str, file: LogFile | None) -> None:
        self._command = command
        self._file = file
        self._before: dict[str, Any] | None = None
        self._was_configured = False

    def configure(self) -> None:
        """Set logging up, once."""
        if self._before is not None:
            return
        # Imported here: see LIGHT_COMMANDS.
        import structlog  # noqa: PLC0415

        from baton.runtime.logging import configure_logging  # noqa: PLC0415

        self._before = structlog.get_config()
        self._was_configured = structlog.is_configured()
        level = "info" if self._command in ("run", "worker") else "warning"
        configure_logging(file=self._file, level=level)

    def restore(self) -> None:
        """Put structlog back as it was before `configure()`, and close the log file."""
        if self._before is not None:
            import structlog  # noqa: PLC0415

            from baton.runtime.logging import stop_stdlib_forwarding  # noqa: PLC0415

            if self._was_configured:
                structlog.configure(**self._before)
            else:
                # Unconfigured, baton's lines go to the standard library's logging, silent
                # unless the program set it up (docs/architecture.md, "Where the log lines go").
                structlog.reset_defaults()
            stop_stdlib_forwarding()
        if self._file is not None:
            self._file.close()
