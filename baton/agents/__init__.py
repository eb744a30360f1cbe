"""The agent: its loop over journaled conversations, compaction, tools, journals and the
settings an agent is made of (`RedisJournalStore` loads redis-py on first use)."""

from typing import TYPE_CHECKING

from baton._lazy import lazy_exports
from baton.agents.agent_config import DEFAULT_AGENTS, AgentConfig
from baton.agents.journal import FileJournalStore, JournalStore, MemoryJournalStore

if TYPE_CHECKING:
    from baton.agents.redis_journal import RedisJournalStore

__all__ = [
    "DEFAULT_AGENTS",
    "AgentConfig",
    "FileJournalStore",
    "JournalStore",
    "MemoryJournalStore",
    "RedisJournalStore",
]

__getattr__ = lazy_exports(__name__, {"RedisJournalStore": "baton.agents.redis_journal"})
