"""`[memory]` of baton.toml as the pipeline uses it: the store's settings (docs/memory.md,
"Settings") plus whether agents and the Scheduler use long-term memory at all, and how much of
it a work order carries (README.md, "Long-term memory")."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from pydantic import Field

from baton.memory import MemorySettings, MemoryStore, open_memory


class MemoryConfig(MemorySettings):
    """`[memory]`: the store's backend and files, and how the pipeline uses it."""

    enabled: bool = Field(
        True, description="false: no memory tools, no findings stored, nothing recalled"
    )
    memory_budget_tokens: int = Field(
        2000,
        ge=0,
        description="estimated tokens of recalled entries a work order's AgentContext carries "
        "at most (0: none)",
    )
    recall_limit: int = Field(
        5, ge=1, le=50, description="entries recalled at most, by Recall and per work order"
    )


@asynccontextmanager
async def pipeline_memory(
    workspace: Path, config: MemoryConfig
) -> AsyncIterator[MemoryStore | None]:
    """The workspace's store for the block (None when `[memory] enabled = false`); closed on
    exit even when the block is cancelled."""
    if not config.enabled:
        yield None
        return
    store = await open_memory(workspace, config)
    try:
        yield store
    finally:
        with anyio.CancelScope(shield=True):
            await store.close()
