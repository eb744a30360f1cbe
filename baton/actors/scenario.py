"""Scenarios: `scenarios/<name>/scenario.toml` and the Scheduler's persisted state of each.

The state is written atomically after every transition, so a restarted Scheduler knows where
every scenario stood; a handoff already applied is recognised by its id and not applied twice.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from baton.actors.artifacts import write_atomic
from baton.actors.messages import (
    ACTIVE_PHASES,
    Dispatch,
    ScenarioPhase,
    ScenarioState,
    scenario_conversation,
)
from baton.context.packages import HandoffPackage
from baton.errors import ConfigError, UsageError

SCENARIOS_DIR = "scenarios"
SCENARIO_FILE = "scenario.toml"
STATE_DIR = Path(".baton") / "scheduler"


class IterationPolicy(BaseModel):
    """When a scenario is done, goes back to Init, or fails (docs/handoffs.md, "Iteration
    policy")."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    success_threshold: float = Field(0.85, gt=0, le=1, description="pass rate that completes")
    layer1_critical_share: float = Field(
        0.30, ge=0, le=1, description="critical Layer-1 share of samples that returns to Init"
    )
    max_iterations: int = Field(5, ge=1, description="iterations before the scenario fails")


class ScenarioConfig(BaseModel):
    """`scenarios/<name>/scenario.toml`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    requirement: str = Field(min_length=1)
    auto_approve: bool = False
    offline_script: str | None = Field(
        None, description="script the offline model plays, relative to the scenario folder"
    )
    policy: IterationPolicy = IterationPolicy()
    actors: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="per-agent context budget overrides for this scenario"
    )


def scenario_dir(workspace: Path, name: str) -> Path:
    return workspace / SCENARIOS_DIR / name


def load_scenario(workspace: Path, name: str) -> ScenarioConfig:
    """Read a scenario's config; a scenario without a file gets defaults and needs a requirement."""
    path = scenario_dir(workspace, name) / SCENARIO_FILE
    if not path.is_file():
        raise UsageError(
            f"no scenario {name!r}: {path} does not exist — create it or pass --requirement"
        )
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return ScenarioConfig.model_validate({"name": name, **data})
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise ConfigError(f"invalid {path}: {exc}") from None


class PendingHandoff(BaseModel):
    """An Init → Execute handoff waiting for a human's approval (docs/handoffs.md, "Approval")."""

    model_config = ConfigDict(frozen=True)

    handoff_id: str
    package: HandoffPackage


class ScenarioRecord(BaseModel):
    """Everything the Scheduler remembers about one scenario between messages and restarts."""

    model_config = ConfigDict(extra="forbid")

    scenario: str
    requirement: str
    run: int = Field(1, ge=1, description="how many times the scenario has been submitted")
    phase: ScenarioPhase = "designing"
    iteration: int = 0
    config: ScenarioConfig
    pending: PendingHandoff | None = None
    last_package: HandoffPackage | None = None
    last_report: str | None = None
    reason: str | None = None
    applied_handoffs: list[str] = Field(default_factory=list)
    nudges: int = Field(0, description="rounds ended without a handoff since the last one")
    dispatches: int = Field(0, description="work orders sent so far; numbers the next one")
    outbox: Dispatch | None = Field(
        None, description="the latest work order, sent again on start (agents dedupe it)"
    )
    history: list[dict[str, Any]] = Field(default_factory=list)
    findings: dict[str, Any] = Field(default_factory=dict)

    @property
    def active(self) -> bool:
        return self.phase in ACTIVE_PHASES

    @property
    def conversation(self) -> str:
        """The agents' conversation for this run: a resubmitted scenario starts afresh."""
        return scenario_conversation(self.scenario, self.run)

    def next_dispatch_id(self) -> str:
        """The id of the next work order: derived from saved state, so a handler re-run
        after a crash names the same order again."""
        return f"{self.conversation}#{self.dispatches + 1}"

    def state(self, *, started: bool = False) -> ScenarioState:
        """The public view of this record."""
        pending = None
        if self.pending is not None:
            pending = {
                "handoff_id": self.pending.handoff_id,
                "handoff_type": self.pending.package.handoff_type,
                "package": self.pending.package.model_dump(mode="json"),
            }
        return ScenarioState(
            scenario=self.scenario,
            phase=self.phase,
            iteration=self.iteration,
            requirement=self.requirement,
            pending_approval=pending,
            last_report=self.last_report,
            reason=self.reason,
            started=started,
        )

    def note(self, event: str, **fields: Any) -> None:
        """Append to the history the agents see as `relevant_history` (kept short)."""
        self.history.append({"event": event, **fields})
        del self.history[:-20]


class ScenarioStore:
    """Scheduler state as `<workspace>/.baton/scheduler/<scenario>.json`."""

    def __init__(self, workspace: Path) -> None:
        self.root = workspace / STATE_DIR

    async def save(self, record: ScenarioRecord) -> None:
        await write_atomic(
            self.root / f"{record.scenario}.json", record.model_dump_json(indent=2).encode()
        )

    async def load_all(self) -> dict[str, ScenarioRecord]:
        records: dict[str, ScenarioRecord] = {}
        root = anyio.Path(self.root)
        if not await root.exists():
            return records
        async for path in root.glob("*.json"):
            record = ScenarioRecord.model_validate_json(await path.read_text(encoding="utf-8"))
            records[record.scenario] = record
        return records
