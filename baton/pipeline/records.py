"""The pipeline's token-log records (docs/token-log.md, "Fields"): a work order's recall from
long-term memory, each iteration's outcome and each scenario run's end; registered with the
token log, with the agents' own, on import."""

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


class IterationEnded(TokenLogRecord):
    event: Literal["iteration.ended"] = "iteration.ended"
    iteration: int = Field(ge=0, description="the iteration Execute reported on (1, 2, ...)")
    handoff_type: str = Field(
        description="how Execute returned: execute_to_init | scenario_complete"
    )
    verdict: Literal["complete", "return_to_init", "iterate", "fail"] = Field(
        description='the iteration policy\'s decision (docs/handoffs.md, "Iteration policy")'
    )
    reason: str = Field(description="why, as the next work order says it")
    success_rate: float | None = Field(
        ge=0, le=1, description="passed samples / total samples; null when no report gave it"
    )
    passed_samples: int | None = Field(ge=0, description="samples that passed, if reported")
    total_samples: int | None = Field(ge=0, description="samples run, if reported")


class ScenarioEnded(TokenLogRecord):
    event: Literal["scenario.ended"] = "scenario.ended"
    outcome: Literal["completed", "failed", "stopped"] = Field(
        description="how the run ended; a stopped run resumed later goes on in the same "
        "conversation"
    )
    reason: str = Field(description="why it ended (the policy's verdict, the failure, the cap)")
    iterations: int = Field(ge=0, description="iterations Execute reported in this run")


register_records(MemoryRecalled, IterationEnded, ScenarioEnded)
