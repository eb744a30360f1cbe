"""The actor kernel's errors: unknown, existing or dead actors, unhandled messages, failed
handlers, timed-out asks, and failures reported by another process.

Each derives from `BatonError` (`baton.errors`, which re-exports them for users)."""

from __future__ import annotations

from baton.errors import RuntimeFailure, UsageError


class UnknownActorError(UsageError):
    """Raised when a message is addressed to an actor name that is not registered."""

    def __init__(self, name: str, known: list[str] | None = None) -> None:
        self.name = name
        hint = f"; known actors: {', '.join(sorted(known))}" if known else ""
        super().__init__(f"no actor named {name!r}{hint} — spawn it first or check the name")


class ActorExistsError(UsageError):
    """Raised when spawning an actor under a name that is already taken."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"an actor named {name!r} is already running — pick another name")


class UnhandledMessageError(UsageError):
    """Raised when an actor has no handler for the type of message it was asked to handle."""

    def __init__(self, actor: str, message_type: str, handled: list[str] | None = None) -> None:
        self.actor = actor
        self.message_type = message_type
        hint = f"; it handles: {', '.join(sorted(handled))}" if handled else ""
        super().__init__(f"actor {actor!r} has no handler for {message_type!r}{hint}")


class ActorDeadError(RuntimeFailure):
    """Raised when a message was sent to, or awaited from, an actor that has stopped."""

    def __init__(self, name: str, reason: str = "stopped") -> None:
        self.name = name
        super().__init__(f"actor {name!r} is not running ({reason}); respawn it or check status")


class HandlerFailedError(RuntimeFailure):
    """Raised when the handler of an ask raised on every attempt; the cause is `__cause__`."""

    def __init__(self, actor: str, message_type: str, cause: BaseException) -> None:
        self.actor = actor
        self.message_type = message_type
        self.cause = cause
        super().__init__(
            f"actor {actor!r} failed handling {message_type!r}: {type(cause).__name__}: {cause}"
        )


class AskTimeoutError(RuntimeFailure, TimeoutError):
    """Raised when an ask got no reply within its timeout; a late reply is dropped."""

    def __init__(self, actor: str, timeout: float) -> None:
        self.actor = actor
        self.timeout = timeout
        super().__init__(f"actor {actor!r} did not reply within {timeout:g}s; raise the timeout")


class RemoteFailure(RuntimeFailure):
    """Raised when the runtime process reported an error this client has no class for.

    It is also the `cause` of a `HandlerFailedError` raised by the client: the handler's own
    exception lives in the runtime process; `remote_type` names its class.
    """

    def __init__(self, message: str, remote_type: str = "Exception") -> None:
        self.remote_type = remote_type
        super().__init__(message)
