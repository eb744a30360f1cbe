"""baton: an async actor runtime for long multi-agent Claude pipelines."""

from baton.actors import Actor, ActorRef, handler
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
from baton.runtime import Client, Runtime, SupervisorPolicy, connect

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
