"""Where a workspace's runtime keeps its control socket and pid file, and reading the pid:
what a client needs of the workspace, apart from the claim that writes them (which logs with
structlog), so the command line's light commands start without it (docs/architecture.md,
"What a command imports")."""

from __future__ import annotations

from pathlib import Path

from baton._regular_files import read_regular

CONTROL_SOCKET = Path(".baton") / "control.sock"
PID_FILE = Path(".baton") / "baton.pid"
_PID_BYTES = 64


def read_pid(pid_file: Path) -> int | None:
    """The pid written in `pid_file`, or None if there is none or it is not a number."""
    try:
        # Only a regular file is read: a named pipe planted there would block the reader.
        text = read_regular(pid_file, str(pid_file), _PID_BYTES).decode("ascii").strip()
    except (OSError, ValueError):  # UnicodeDecodeError is a ValueError
        return None
    return int(text) if text.isdigit() else None
