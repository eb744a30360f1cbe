"""baton: an async actor runtime for long multi-agent Claude pipelines."""

from baton.errors import (
    ActorDeadError,
    AskTimeoutError,
    BatonError,
    HandlerFailedError,
    RuntimeFailure,
    UnhandledMessageError,
    UnknownActorError,
    UsageError,
)
from baton.runtime import Actor, ActorRef, Runtime, SupervisorPolicy, handler
from baton.server import Client, connect

__all__ = [
    "Actor",
    "ActorDeadError",
    "ActorRef",
    "AskTimeoutError",
    "BatonError",
    "Client",
    "HandlerFailedError",
    "Runtime",
    "RuntimeFailure",
    "SupervisorPolicy",
    "UnhandledMessageError",
    "UnknownActorError",
    "UsageError",
    "connect",
    "handler",
]
