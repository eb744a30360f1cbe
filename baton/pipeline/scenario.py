"""Scenarios: `scenarios/<name>/scenario.toml` and the Scheduler's persisted state of each.

The state is written atomically after every transition, so a restarted Scheduler knows where
every scenario stood; a handoff already applied is recognised by its id and not applied twice.
"""

from __future__ import annotations

import errno
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from baton._log import get_logger
from baton._regular_files import read_regular
from baton.agents.budget_overrides import override_problems
from baton.agents.messages import scenario_conversation
from baton.agents.prompt_files import check_scenario_prompts
from baton.context.strategy import ContextBudget
from baton.errors import ConfigError, validation_problems
from baton.models.price_config import ScenarioLimits
from baton.pipeline.artifacts import write_atomic
from baton.pipeline.errors import DamagedScenarioError, NoScenarioFileError
from baton.pipeline.messages import Dispatch
from baton.pipeline.packages import HandoffPackage
from baton.pipeline.scenario_names import ScenarioName, check_scenario_name
from baton.pipeline.scenario_state import ACTIVE_PHASES, ScenarioPhase, ScenarioState
from baton.runtime.settings import describe_errors, read_toml

log = get_logger(__name__)

SCENARIOS_DIR = "scenarios"
SCENARIO_FILE = "scenario.toml"
STATE_DIR = Path(".baton") / "scheduler"
# Far above any real record; a bound, so a file swapped for something huge is refused.
MAX_RECORD_BYTES = 64 * 1024 * 1024


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
    data = _read_scenario_file(path)
    try:
        config = ScenarioConfig.model_validate({"name": name, **data})
    except ValidationError as exc:
        raise ConfigError(describe_errors(exc, str(path))) from None
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
            raise ConfigError(f"invalid configuration in {path}: " + "; ".join(problems))
    check_scenario_prompts(workspace, name)  # inside the workspace (docs/handoffs.md, "Sandbox")
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


def _read_record_file(path: Path) -> bytes:
    """The bytes of the record file at `path`, never waiting on a named pipe (blocks: run it
    off the event loop); `IsADirectoryError` for a directory, `ValueError` saying why another
    kind of file is refused, `FileNotFoundError`."""
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
    return read_regular(path, str(path), MAX_RECORD_BYTES)


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


class ScenarioStore:
    """Scheduler state as `<workspace>/.baton/scheduler/<scenario>.json`.

    A file that cannot be read back (garbage, empty, not a record, not a regular file) does
    not stop the others: `load_all` leaves it out and keeps, under its scenario's name, the
    one-line error that names the file and what to do; `damage` says it again while the file
    is still there (`scenario_damage.py`).
    """

    def __init__(self, workspace: Path) -> None:
        self.root = workspace / STATE_DIR
        self.damaged: dict[str, DamagedScenarioError] = {}

    def path(self, scenario: str) -> Path:
        return self.root / f"{scenario}.json"

    async def save(self, record: ScenarioRecord) -> None:
        data = record.model_dump_json(indent=2).encode()
        await write_atomic(self.path(record.scenario), data, private=True)

    async def load_all(self) -> dict[str, ScenarioRecord]:
        """Every scenario record that reads back; the damaged ones are in `damaged`."""
        records: dict[str, ScenarioRecord] = {}
        self.damaged = {}
        root = anyio.Path(self.root)
        if not await root.exists():
            return records
        async for path in root.glob("*.json"):
            try:
                record = await self._load(Path(path))
            except DamagedScenarioError as error:
                log.error(
                    "scheduler.damaged_state",
                    scenario=path.stem,
                    path=str(path),
                    error=str(error),
                )
                self.damaged[path.stem] = error
                continue
            records[record.scenario] = record
        return records

    async def damage(self, scenario: str) -> DamagedScenarioError | None:
        """The error of the scenario's damaged file, if it is still there (once moved aside,
        the scenario can start afresh)."""
        error = self.damaged.get(scenario)
        if error is not None and not await anyio.Path(self.path(scenario)).exists():
            del self.damaged[scenario]
            return None
        return error

    async def _load(self, path: Path) -> ScenarioRecord:
        fix = (
            f"move it aside (e.g. `mv {path} {path}.damaged`) and submit {path.stem!r} again "
            "to start it afresh, or restore it from a backup and restart `baton run`"
        )

        def damaged(problem: str) -> DamagedScenarioError:
            return DamagedScenarioError(path.stem, path, problem, fix)

        try:
            data = await anyio.to_thread.run_sync(_read_record_file, path)
        except IsADirectoryError:
            raise damaged("is a directory, not a scenario record") from None
        except ValueError as exc:  # a named pipe, a device, a link, too big: never opened
            raise damaged(str(exc).removeprefix(f"{path} ")) from None
        except OSError as exc:
            raise damaged(f"cannot be read ({exc.strerror or exc})") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise damaged("is not UTF-8 text, so not a scenario record") from None
        try:
            record = ScenarioRecord.model_validate_json(text)
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            if not text.strip():
                problem = "is empty"
            elif error["type"] == "json_invalid":
                problem = f"is not JSON ({error['msg']})"
            else:
                first = validation_problems([error], show_input=False)[0]
                problem = f"is not a valid scenario record ({first})"
            raise damaged(problem) from None
        if record.scenario != path.stem:
            raise damaged(f"holds scenario {record.scenario!r}, not {path.stem!r}")
        return record
