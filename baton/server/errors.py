"""The process's and the control API's errors: no runtime, a busy workspace, refused requests, a
run whose scenarios failed.

Each derives from `BatonError` (`baton.errors`, which re-exports them for users)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from baton._no_runtime import no_runtime_message
from baton.errors import RuntimeFailure, UsageError
from baton.mailboxes.errors import InvalidMessageError, MailboxFullError


class NoRuntimeError(UsageError):
    """Raised when no baton process answers on the workspace's control socket."""

    def __init__(self, workspace: Path | str) -> None:
        self.workspace = str(workspace)
        super().__init__(no_runtime_message(workspace))


class WorkspaceBusyError(UsageError):
    """Raised when another live baton process already holds the workspace."""

    def __init__(self, workspace: Path | str, pid: int | None) -> None:
        self.workspace = str(workspace)
        self.pid = pid
        holder = f"a baton runtime (pid {pid})" if pid else "another baton runtime"
        super().__init__(
            f"{holder} already runs in {workspace} — stop it with "
            f"`baton stop --workspace {workspace}` or use another workspace"
        )


class ControlRequestError(UsageError):
    """Raised when a request to the control API is malformed; the message names what to fix."""


class InvalidPayloadError(InvalidMessageError):
    """Raised when a message payload does not validate against the actor's message type."""


class MailboxStillFullError(MailboxFullError):
    """Raised when a message told over the control API found the mailbox full until its timeout."""

    def __init__(self, name: str, capacity: int, timeout: float) -> None:
        RuntimeFailure.__init__(
            self,
            f"mailbox {name!r} stayed full ({capacity} messages) for {timeout:g}s — retry "
            "later, or pass a longer timeout",
        )
        self.name = name
        self.capacity = capacity
        self.timeout = timeout


class ScenarioFailure(RuntimeFailure):
    """Raised when `baton run --exit-when-idle` ends and a scenario it ran did not complete
    (it failed, or stopped at its spend cap), so the command exits 1 and a script or CI can
    tell (the `ended` lines above say why)."""

    def __init__(self, unfinished: Sequence[str]) -> None:
        self.unfinished = list(unfinished)
        names = ", ".join(self.unfinished)
        super().__init__(
            f"{len(self.unfinished)} scenario(s) did not complete: {names} — see the `ended` "
            "line of each above, and `baton tail --scenario NAME` for what led there"
        )
