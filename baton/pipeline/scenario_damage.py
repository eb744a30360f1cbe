"""What the Scheduler says of a scenario record it cannot read back, and how `status` asks.

A damaged `.baton/scheduler/<scenario>.json` does not stop the Scheduler: that scenario is
refused (submit, approve, reject, show) with the error naming the file, and `baton status`
lists it with what is wrong and what to do, until the file is moved aside (README.md,
"After a full disk or a damaged file"). Kept apart from `scenario.py` so the control API's
status model does not import the Scheduler's store.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from baton.pipeline.errors import DamagedScenarioError


class DamagedScenario(BaseModel):
    """A scenario whose record cannot be read back: its file, the problem and the fix."""

    model_config = ConfigDict(frozen=True)

    scenario: str
    path: str = Field(description="the scenario's record file")
    problem: str = Field(description="what is wrong with it, e.g. `is not JSON (...)`")
    fix: str = Field(description="what to do: move it aside and submit again, or restore it")

    @classmethod
    def of(cls, error: DamagedScenarioError) -> DamagedScenario:
        """The view of the Scheduler's refusal."""
        return cls(scenario=error.scenario, path=error.path, problem=error.problem, fix=error.fix)


class DamagedQuery(BaseModel):
    """Ask the Scheduler which scenarios' records it could not read back (a list of
    `DamagedScenario`, empty when all of them read)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
