"""baton: an async actor runtime for long multi-agent Claude pipelines.

The error tree, the actor kernel and the client are imported on first use of their names:
importing any module of baton runs this file first, and the command line's light commands
must not pay for the runtime, FastAPI, rich or the SDK, nor `baton tell` and `baton ask` for
pydantic (docs/architecture.md, "What a command imports").
"""

from typing import TYPE_CHECKING

from baton._lazy import lazy_exports

if TYPE_CHECKING:
    from baton.errors import BatonError, RuntimeFailure, UsageError
    from baton.runtime import Actor, ActorRef, Runtime, SupervisorPolicy, handler
    from baton.runtime.errors import (
        ActorDeadError,
        AskTimeoutError,
        HandlerFailedError,
        UnhandledMessageError,
        UnknownActorError,
    )
    from baton.server import Client, connect

__getattr__ = lazy_exports(
    __name__,
    {
        "ActorDeadError": "baton.errors",
        "AskTimeoutError": "baton.errors",
        "BatonError": "baton.errors",
        "HandlerFailedError": "baton.errors",
        "RuntimeFailure": "baton.errors",
        "UnhandledMessageError": "baton.errors",
        "UnknownActorError": "baton.errors",
        "UsageError": "baton.errors",
        "Actor": "baton.runtime.actor",
        "handler": "baton.runtime.actor",
        "ActorRef": "baton.runtime.ref",
        "Runtime": "baton.runtime.runtime",
        "SupervisorPolicy": "baton.runtime.supervision",
        "Client": "baton.server.client",
        "connect": "baton.server.client",
    },
)

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
