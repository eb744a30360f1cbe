"""The agent: its loop over journaled conversations, compaction, tools, journals and the
settings an agent is made of.

Every name is imported on first use (`RedisJournalStore` loads redis-py): importing one
module of the package, as `baton status` does for the compaction audit, runs this file
first (docs/architecture.md, "What a command imports")."""

from typing import TYPE_CHECKING

from baton._lazy import lazy_exports

if TYPE_CHECKING:
    from baton.agents.agent_config import AgentConfig
    from baton.agents.journal import FileJournalStore, JournalStore, MemoryJournalStore
    from baton.agents.redis_journal import RedisJournalStore

__all__ = [
    "AgentConfig",
    "FileJournalStore",
    "JournalStore",
    "MemoryJournalStore",
    "RedisJournalStore",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "AgentConfig": "baton.agents.agent_config",
        "FileJournalStore": "baton.agents.journal",
        "JournalStore": "baton.agents.journal",
        "MemoryJournalStore": "baton.agents.journal",
        "RedisJournalStore": "baton.agents.redis_journal",
    },
)
