"""The runtime: actor registry, supervision, dead letters, config, logging and the token log."""

from baton.actors.agent_config import AgentConfig
from baton.runtime.config import BatonConfig, load_config, parse_config
from baton.runtime.dead_letters import DeadLetter, DeadLetterLog
from baton.runtime.logging import configure_logging
from baton.runtime.runtime import ActorStatus, MailboxFactory, Runtime, memory_mailboxes
from baton.runtime.supervision import SupervisorPolicy
from baton.runtime.token_log import TOKEN_LOG, TokenLog
from baton.runtime.token_records import TOKEN_RECORD, TokenRecord

__all__ = [
    "TOKEN_LOG",
    "TOKEN_RECORD",
    "ActorStatus",
    "AgentConfig",
    "BatonConfig",
    "DeadLetter",
    "DeadLetterLog",
    "MailboxFactory",
    "Runtime",
    "SupervisorPolicy",
    "TokenLog",
    "TokenRecord",
    "configure_logging",
    "load_config",
    "memory_mailboxes",
    "parse_config",
]
