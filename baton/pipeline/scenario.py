"""Scenarios: `scenarios/<name>/scenario.toml` and the record the Scheduler keeps of each.

The record is saved after every transition (`scenario_store.py`: files in the workspace, or
Redis when processes share a Redis mailbox), so a restarted Scheduler knows where every
scenario stood; a handoff already applied is recognised by its id and not applied twice.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from baton._lazy import lazy_exports
from baton.agents.budget_overrides import override_problems
from baton.agents.messages import scenario_conversation
from baton.agents.prompt_files import check_scenario_prompts
from baton.context.strategy import ContextBudget
from baton.errors import ConfigError
from baton.models.price_config import ScenarioLimits
from baton.pipeline.errors import NoScenarioFileError
from baton.pipeline.messages import Dispatch
from baton.pipeline.packages import HandoffPackage
from baton.pipeline.scenario_names import ScenarioName, check_scenario_name
from baton.pipeline.scenario_state import ACTIVE_PHASES, ScenarioPhase, ScenarioState
from baton.runtime.settings import MAX_CONFIG_BYTES, describe_errors, read_toml

SCENARIOS_DIR = "scenarios"
SCENARIO_FILE = "scenario.toml"


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

    name: ScenarioName
    requirement: str = Field(min_length=1)
    auto_approve: bool = False
    offline_script: str | None = Field(
        None, description="script the offline model plays, relative to the scenario folder"
    )
    policy: IterationPolicy = IterationPolicy()
    actors: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="per-agent context budget overrides for this scenario"
    )
    scenario: ScenarioLimits = Field(
        ScenarioLimits(), description="[scenario]: max_cost_usd, the spend cap of each run"
    )


def scenario_dir(workspace: Path, name: str) -> Path:
    return workspace / SCENARIOS_DIR / name


def load_scenario(
    workspace: Path, name: str, budgets: Mapping[str, ContextBudget] | None = None
) -> ScenarioConfig:
    """Read a scenario's config; a scenario without a file gets defaults and needs a requirement.
    Blocks: the Scheduler runs it in a worker thread.

    As strict as `baton.toml`: a file that is not UTF-8 or not TOML, an unknown key or a bad
    value is a one-line `ConfigError` naming the file and the key; so is a directory, a
    named pipe or a device where the file should be (never opened to wait). With `budgets` (each
    agent's own budget), `[actors.<role>]` is checked on top of them: only those roles, only
    budget keys, and a budget that validates once merged.
    """
    path = scenario_dir(workspace, check_scenario_name(name)) / SCENARIO_FILE
    config = _validated(_read_scenario_file(path), name, str(path), budgets)
    check_scenario_prompts(workspace, name)  # inside the workspace (docs/handoffs.md, "Sandbox")
    return config


def scenario_from_bytes(data: bytes, name: str, shown: str) -> ScenarioConfig:
    """A scenario's config from the bytes of its `scenario.toml` (the object the submit
    copied into the store: docs/storage.md, "A worker's own directory"), as strict as
    `load_scenario`; a `ConfigError` names it as `shown` (its key)."""
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{shown} is over {MAX_CONFIG_BYTES} bytes, too large for a TOML file")
    try:
        parsed = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        problem = f"is not UTF-8 text (offset {exc.start})"
        raise ConfigError(f"{shown} {problem} — fix the file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{shown} is not valid TOML: {exc} — fix the file") from None
    except RecursionError:
        raise ConfigError(f"{shown} nests arrays or tables too deep — flatten them") from None
    return _validated(parsed, check_scenario_name(name), shown, None)


def _validated(
    data: dict[str, Any], name: str, shown: str, budgets: Mapping[str, ContextBudget] | None
) -> ScenarioConfig:
    try:
        config = ScenarioConfig.model_validate({"name": name, **data})
    except ValidationError as exc:
        raise ConfigError(describe_errors(exc, shown)) from None
    if budgets is not None:
        problems = [
            problem
            for role, overrides in config.actors.items()
            for problem in (
                override_problems(budgets[role], overrides, ("actors", role))
                if role in budgets
                else [f"unknown key {'actors.' + role!r} (roles: {', '.join(budgets)})"]
            )
        ]
        if problems:
            raise ConfigError(f"invalid configuration in {shown}: " + "; ".join(problems))
    return config


def _read_scenario_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        scenarios = path.parent.parent
        known = (
            [f.name for f in scenarios.iterdir() if (f / SCENARIO_FILE).is_file()]
            if (scenarios.is_dir())
            else []
        )
        raise NoScenarioFileError(path.parent.name, path, known)
    # Anything else at the path (a directory, a named pipe) is refused by `read_toml`, which
    # never opens it to wait: a ConfigError saying what is there, not "does not exist".
    return read_toml(path)


class PendingHandoff(BaseModel):
    """An Init → Execute handoff waiting for a human's approval (docs/handoffs.md, "Approval")."""

    model_config = ConfigDict(frozen=True)

    handoff_id: str
    package: HandoffPackage


class ScenarioRecord(BaseModel):
    """Everything the Scheduler remembers about one scenario between messages and restarts."""

    model_config = ConfigDict(extra="forbid")

    scenario: ScenarioName
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
    resume_phase: ScenarioPhase | None = Field(
        None, description="the phase a run stopped by its spend cap continues in"
    )
    waiting: str | None = Field(
        None,
        exclude=True,
        description="why the agent it waits on cannot go on for now (not saved: a restart "
        "retries at once)",
    )

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
            run=self.run,
            requirement=self.requirement,
            pending_approval=pending,
            last_report=self.last_report,
            reason=self.reason,
            waiting=self.waiting,
            started=started,
        )

    def note(self, event: str, **fields: Any) -> None:
        """Append to the history the agents see as `relevant_history` (kept short)."""
        self.history.append({"event": event, **fields})
        del self.history[:-20]


if TYPE_CHECKING:
    from baton.pipeline.scenario_store import FileScenarioStore, ScenarioStore  # noqa: F401

# The stores moved to `scenario_store.py` (which imports this module); still importable here.
__getattr__ = lazy_exports(
    __name__,
    {
        "FileScenarioStore": "baton.pipeline.scenario_store",
        "ScenarioStore": "baton.pipeline.scenario_store",
    },
)
