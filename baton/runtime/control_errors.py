"""Errors of the control API, the client and `baton run` (all derive from `BatonError`)."""

from __future__ import annotations

from pathlib import Path

from baton.errors import InvalidMessageError, MailboxFullError, RuntimeFailure, UsageError


def _run_command(workspace: Path | str) -> str:
    return "baton run" if str(workspace) == "." else f"baton run --workspace {workspace}"


class NoRuntimeError(UsageError):
    """Raised when no baton process answers on the workspace's control socket."""

    def __init__(self, workspace: Path | str) -> None:
        self.workspace = str(workspace)
        super().__init__(f"no runtime in {workspace} — start one with `{_run_command(workspace)}`")


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


class NoSchedulerError(UsageError):
    """Raised when a scenario request reaches a runtime in which no scheduler actor runs."""

    def __init__(self) -> None:
        super().__init__(
            "no 'scheduler' actor is running in this runtime, so it cannot take scenarios — "
            "spawn the pipeline's scheduler (`baton run` does not start one yet), or message "
            "other actors with `baton tell` / `baton ask`"
        )


class UnknownScenarioError(UsageError):
    """Raised when the scheduler knows no scenario by the requested name."""

    def __init__(self, scenario: str) -> None:
        self.scenario = scenario
        super().__init__(
            f"no scenario named {scenario!r} — submit it first with `baton submit {scenario}`"
        )


class CommandLineError(UsageError):
    """Raised when a `baton` command-line argument is malformed (the CLI exits with 2)."""


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


class SchedulerReplyFailure(RuntimeFailure):
    """Raised when the scheduler answered a scenario request with something not a ScenarioState."""

    def __init__(self, reply: object) -> None:
        super().__init__(
            f"the scheduler replied with {type(reply).__name__}, not ScenarioState — this is a "
            "bug in the scheduler actor; report it with the runtime's log"
        )


class RemoteFailure(RuntimeFailure):
    """Raised when the runtime process reported an error this client has no class for.

    It is also the `cause` of a `HandlerFailedError` raised by the client: the handler's own
    exception lives in the runtime process; `remote_type` names its class.
    """

    def __init__(self, message: str, remote_type: str = "Exception") -> None:
        self.remote_type = remote_type
        super().__init__(message)
