"""The runtime: actor registry, supervision, dead letters, logging set-up."""

from baton.runtime.dead_letters import DeadLetter, DeadLetterLog
from baton.runtime.logging import configure_logging
from baton.runtime.runtime import ActorStatus, MailboxFactory, Runtime, memory_mailboxes
from baton.runtime.supervision import SupervisorPolicy

__all__ = [
    "ActorStatus",
    "DeadLetter",
    "DeadLetterLog",
    "MailboxFactory",
    "Runtime",
    "SupervisorPolicy",
    "configure_logging",
    "memory_mailboxes",
]
