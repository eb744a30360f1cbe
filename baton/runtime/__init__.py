"""The actor kernel: actors, handlers, refs, the runtime, supervision, dead letters, logging
and the token-log writer. It knows no agent, model or scenario."""

from typing import TYPE_CHECKING

from baton._lazy import lazy_exports
from baton.runtime.actor import Actor, handler
from baton.runtime.backoff import Backoff
from baton.runtime.context_status import ContextFill, ContextProvider, ContextProviders
from baton.runtime.dead_letters import DeadLetter, DeadLetterLog
from baton.runtime.logging import configure_logging
from baton.runtime.ref import ActorRef
from baton.runtime.runtime import ActorStatus, MailboxFactory, Runtime, memory_mailboxes
from baton.runtime.settings import (
    KernelConfig,
    LogsConfig,
    RedisConfig,
    RuntimeConfig,
    SupervisionConfig,
    load_settings,
)
from baton.runtime.supervision import SupervisorPolicy
from baton.runtime.token_log import TOKEN_LOG, TokenLog
from baton.runtime.token_records import TOKEN_RECORD, TokenRecord

if TYPE_CHECKING:
    from baton.runtime.distributed import Distributed

__getattr__ = lazy_exports(
    __name__,
    {"Distributed": "baton.runtime.distributed"},  # redis-py: Redis mailboxes only
)

__all__ = [
    "TOKEN_LOG",
    "TOKEN_RECORD",
    "Actor",
    "ActorRef",
    "ActorStatus",
    "Backoff",
    "ContextFill",
    "ContextProvider",
    "ContextProviders",
    "DeadLetter",
    "DeadLetterLog",
    "Distributed",
    "KernelConfig",
    "LogsConfig",
    "MailboxFactory",
    "RedisConfig",
    "Runtime",
    "RuntimeConfig",
    "SupervisionConfig",
    "SupervisorPolicy",
    "TokenLog",
    "TokenRecord",
    "configure_logging",
    "handler",
    "load_settings",
    "memory_mailboxes",
]
