"""The runtime: actor registry, supervision, dead letters, config, logging and the token log."""

import importlib
from typing import TYPE_CHECKING, Any

from baton.actors.agent_config import AgentConfig
from baton.runtime._workspace_claim import WorkspaceClaim, claim_workspace
from baton.runtime.client import Client, connect
from baton.runtime.config import BatonConfig, load_config, parse_config
from baton.runtime.context_status import ContextFill, ContextProvider, ContextProviders
from baton.runtime.control_errors import (
    CommandLineError,
    ControlRequestError,
    InvalidPayloadError,
    MailboxStillFullError,
    NoRuntimeError,
    NoSchedulerError,
    RemoteFailure,
    SchedulerReplyFailure,
    UnknownScenarioError,
    WorkspaceBusyError,
)
from baton.runtime.dead_letters import DeadLetter, DeadLetterLog
from baton.runtime.logging import configure_logging
from baton.runtime.runtime import ActorStatus, MailboxFactory, Runtime, memory_mailboxes
from baton.runtime.supervision import SupervisorPolicy
from baton.runtime.token_log import TOKEN_LOG, TokenLog
from baton.runtime.token_records import TOKEN_RECORD, TokenRecord

if TYPE_CHECKING:
    from baton.runtime.control_api import create_control_app
    from baton.runtime.control_server import ControlServer
    from baton.runtime.distributed import Distributed

# The control server pulls in FastAPI and uvicorn (~0.3 s); only `baton run` needs them, so
# `import baton` and the client-side CLI commands load them on first use.
_LAZY = {
    "ControlServer": "baton.runtime.control_server",
    "create_control_app": "baton.runtime.control_api",
    "Distributed": "baton.runtime.distributed",  # redis-py, needed only on a Redis mailbox
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "TOKEN_LOG",
    "TOKEN_RECORD",
    "ActorStatus",
    "AgentConfig",
    "BatonConfig",
    "Client",
    "CommandLineError",
    "ContextFill",
    "ContextProvider",
    "ContextProviders",
    "ControlRequestError",
    "ControlServer",
    "DeadLetter",
    "DeadLetterLog",
    "Distributed",
    "InvalidPayloadError",
    "MailboxFactory",
    "MailboxStillFullError",
    "NoRuntimeError",
    "NoSchedulerError",
    "RemoteFailure",
    "Runtime",
    "SchedulerReplyFailure",
    "SupervisorPolicy",
    "TokenLog",
    "TokenRecord",
    "UnknownScenarioError",
    "WorkspaceBusyError",
    "WorkspaceClaim",
    "claim_workspace",
    "configure_logging",
    "connect",
    "create_control_app",
    "load_config",
    "memory_mailboxes",
    "parse_config",
]
