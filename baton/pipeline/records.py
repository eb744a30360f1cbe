"""The pipeline's token-log records (docs/token-log.md, "Fields"): a work order's recall from
long-term memory; registered with the token log, with the agents' own, on import."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

import baton.agents.records  # noqa: F401 - the agents' records, registered with these
from baton.runtime.token_records import TokenLogRecord, register_records


class MemoryRecalled(TokenLogRecord):
    event: Literal["memory.recalled"] = "memory.recalled"
    count: int = Field(
        ge=0, description="long-term memory entries put in the work order's AgentContext"
    )
    tokens: int = Field(ge=0, description="their estimated tokens (within memory_budget_tokens)")


register_records(MemoryRecalled)
