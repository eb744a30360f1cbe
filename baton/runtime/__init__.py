"""The actor kernel: actors, handlers, refs, the runtime, supervision, dead letters, logging
and the token-log writer. It knows no agent, model or scenario.

Every name is imported on first use: a program that imports one module of the kernel (the
client its `DEFAULT_ASK_TIMEOUT`, `baton tail` the token log's path) runs this file first,
and must not pay for structlog, the mailboxes or redis-py (docs/architecture.md, "What a
command imports")."""

from typing import TYPE_CHECKING

from baton._lazy import lazy_exports

if TYPE_CHECKING:
    from baton.runtime.actor import Actor, handler
    from baton.runtime.backoff import Backoff
    from baton.runtime.context_fill import ContextFill
    from baton.runtime.context_status import ContextProvider, ContextProviders
    from baton.runtime.dead_letters import DeadLetter, DeadLetterLog
    from baton.runtime.distributed import Distributed
    from baton.runtime.log_files import TOKEN_LOG
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
    from baton.runtime.token_log import TokenLog
    from baton.runtime.token_records import TokenLogRecord, register_records

__getattr__ = lazy_exports(
    __name__,
    {
        "Actor": "baton.runtime.actor",
        "handler": "baton.runtime.actor",
        "Backoff": "baton.runtime.backoff",
        "ContextFill": "baton.runtime.context_fill",
        "ContextProvider": "baton.runtime.context_status",
        "ContextProviders": "baton.runtime.context_status",
        "DeadLetter": "baton.runtime.dead_letters",
        "DeadLetterLog": "baton.runtime.dead_letters",
        "Distributed": "baton.runtime.distributed",  # redis-py: Redis mailboxes only
        "configure_logging": "baton.runtime.logging",
        "ActorRef": "baton.runtime.ref",
        "ActorStatus": "baton.runtime.runtime",
        "MailboxFactory": "baton.runtime.runtime",
        "Runtime": "baton.runtime.runtime",
        "memory_mailboxes": "baton.runtime.runtime",
        "KernelConfig": "baton.runtime.settings",
        "LogsConfig": "baton.runtime.settings",
        "RedisConfig": "baton.runtime.settings",
        "RuntimeConfig": "baton.runtime.settings",
        "SupervisionConfig": "baton.runtime.settings",
        "load_settings": "baton.runtime.settings",
        "SupervisorPolicy": "baton.runtime.supervision",
        "TOKEN_LOG": "baton.runtime.log_files",
        "TokenLog": "baton.runtime.token_log",
        "TokenLogRecord": "baton.runtime.token_records",
        "register_records": "baton.runtime.token_records",
    },
)

__all__ = [
    "TOKEN_LOG",
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
    "TokenLogRecord",
    "configure_logging",
    "handler",
    "load_settings",
    "memory_mailboxes",
    "register_records",
]
