"""Handoff packages (protocol v2.0; docs/handoffs.md, "Packages"): what one agent hands the
next, by path.

A package carries paths and small indexes, never file contents: the receiver loads what it
needs on demand. `ContextPackage`, `InitToExecuteContext` and `ExecuteToInitContext` are the
protocol's two handoffs, field for field; `ScenarioCompletion` is this runtime's own third
handoff (Execute tells the Scheduler an iteration met the success criteria), built
in the same style. Every package lists the workspace-relative paths it references so the
runtime can check they exist before it sends the package on.

Versions are `MAJOR.MINOR`: a receiver accepts any minor of the major it speaks (fields a
newer minor adds land in `extra`) and refuses another major with `PackageVersionError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from baton.errors import validation_problems
from baton.pipeline.errors import InvalidPackageError, PackageVersionError

PACKAGE_VERSION: Final = "2.0"
_SUPPORTED_MAJOR: Final = 2
_VERSION = re.compile(r"^(\d+)(?:\.\d+)*$")

# The protocol names two handoffs; `scenario_complete` (the spelling the token log already
# documents) is added for the third, so all three share one discriminator field.
HandoffType = Literal["init_to_execute", "execute_to_init", "scenario_complete"]

# Keys of a `failure_samples_index` entry that hold paths (docs/handoffs.md,
# "execute_to_init"); any other key ending in `_path` is treated as a path too, so an
# extended index is still checked.
_INDEX_PATH_KEYS: Final = ("sample_path", "trace_path", "evaluation_path", "attribution_path")


def check_version(version: str) -> str:
    """Return `version` if its major is the one this runtime speaks, else raise.

    Raises `PackageVersionError` naming the received and the supported version.
    """
    match = _VERSION.match(version)
    if match is None or int(match.group(1)) != _SUPPORTED_MAJOR:
        raise PackageVersionError(version, PACKAGE_VERSION)
    return version


def _under(base: str, relative: str) -> str:
    # PurePosixPath keeps `..` and absolute parts as given, so the sandbox still sees them.
    return str(PurePosixPath(base) / relative)


class ContextPackage(BaseModel):
    """The base of every handoff package (docs/handoffs.md, "Packages"); extra fields are
    kept, not refused."""

    model_config = ConfigDict(extra="allow")

    version: str = Field(PACKAGE_VERSION, description="package schema version, MAJOR.MINOR")
    handoff_type: HandoffType
    timestamp: str = Field(description="when the package was made, ISO 8601")
    metadata: dict[str, Any] = Field(default_factory=dict, description="extension point")

    @field_validator("version")
    @classmethod
    def _known_major(cls, version: str) -> str:
        # PackageVersionError is not a ValueError, so pydantic lets it through unwrapped: the
        # caller sees the version mismatch itself, not a generic validation error.
        return check_version(version)

    def referenced_paths(self) -> list[str]:
        """The workspace-relative paths this package points at, in field order."""
        return []


class InitToExecuteContext(ContextPackage):
    """Init → Execute: the user's requirement and the paths of the design files
    (docs/handoffs.md, "init_to_execute")."""

    handoff_type: Literal["init_to_execute"] = "init_to_execute"

    user_requirement: str = Field(description="the user's original requirement, verbatim")
    design_artifacts: dict[str, str] = Field(
        description=(
            "design file paths relative to the workspace root, e.g. "
            "unified_scenario_design_path, business_rules_path, format_specifications_path"
        )
    )

    design_rationale: str | None = Field(None, description="Layer-1 design intent and trade-offs")
    design_iterations: list[dict[str, Any]] | None = Field(
        None, description="the design's revision history across reviews"
    )
    known_constraints: list[str] | None = Field(None, description="constraints already known")

    def referenced_paths(self) -> list[str]:
        return list(self.design_artifacts.values())


class ExecuteToInitContext(ContextPackage):
    """Execute → Init: where an iteration's outputs are, and an index of its failures
    (docs/handoffs.md, "execute_to_init").

    `failure_samples_index` paths and `layer1_problems_report_path` are relative to
    `execution_output_dir`, which is relative to the workspace root.
    """

    handoff_type: Literal["execute_to_init"] = "execute_to_init"

    execution_output_dir: str = Field(
        description="the iteration directory, e.g. scenarios/<name>/execution_outputs/iteration_N"
    )
    trigger_reason: str = Field(description="why Execute is returning to Init")
    iteration_summary: dict[str, Any] = Field(description="the iteration's statistics")
    failure_samples_index: list[dict[str, Any]] = Field(
        description=(
            "one entry per failed sample: sample_id, sample_path, trace_path, evaluation_path, "
            "attribution_path (relative to execution_output_dir), failure_type, "
            "conversation_turns, checkers_failed, priority (high/medium/low)"
        )
    )
    layer1_problems_report_path: str = Field(
        description="the report's path relative to execution_output_dir, usually "
        "layer1_problems_report.json"
    )
    modification_suggestions_summary: list[str] = Field(
        description="the 3-5 most important suggestions; details are in the report"
    )

    def referenced_paths(self) -> list[str]:
        paths = [self.execution_output_dir]
        for entry in self.failure_samples_index:
            for key, value in entry.items():
                if isinstance(value, str) and (key in _INDEX_PATH_KEYS or key.endswith("_path")):
                    paths.append(_under(self.execution_output_dir, value))
        paths.append(_under(self.execution_output_dir, self.layer1_problems_report_path))
        return paths


class ScenarioCompletion(ContextPackage):
    """Execute → Scheduler: an iteration met the success criteria and the scenario is done.

    This runtime's own addition to the protocol (docs/handoffs.md, "scenario_complete");
    shaped like `ExecuteToInitContext` so the Scheduler reads both the same way.
    `report_paths` are relative to `execution_output_dir`.
    """

    handoff_type: Literal["scenario_complete"] = "scenario_complete"

    execution_output_dir: str = Field(
        description="the iteration directory, e.g. scenarios/<name>/execution_outputs/iteration_N"
    )
    success_rate: float = Field(
        ge=0, le=1, description="passed samples / total samples, a fraction (0.85, not 85)"
    )
    iteration_summary: dict[str, Any] = Field(description="the iteration's statistics")
    report_paths: dict[str, str] = Field(
        description=(
            "the iteration's reports relative to execution_output_dir, e.g. "
            '{"failure_summary": "failure_summary.json"}'
        )
    )

    completion_summary: str | None = Field(None, description="what was delivered, briefly")
    known_limitations: list[str] | None = Field(None, description="what remains imperfect")

    def referenced_paths(self) -> list[str]:
        paths = [self.execution_output_dir]
        paths.extend(_under(self.execution_output_dir, p) for p in self.report_paths.values())
        return paths


HandoffPackage = Annotated[
    InitToExecuteContext | ExecuteToInitContext | ScenarioCompletion,
    Field(discriminator="handoff_type"),
]

PACKAGE_TYPES: Final[Mapping[str, type[ContextPackage]]] = {
    "init_to_execute": InitToExecuteContext,
    "execute_to_init": ExecuteToInitContext,
    "scenario_complete": ScenarioCompletion,
}


def parse_package(data: Mapping[str, Any] | str | bytes) -> HandoffPackage:
    """Validate a package from a mapping or JSON text into its class, by `handoff_type`.

    The version is checked first, so a package of an unknown major raises
    `PackageVersionError` even if its other fields follow a schema this runtime does not know.
    Anything else that does not validate raises `InvalidPackageError` naming each bad field.
    """
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except ValueError as error:
            raise InvalidPackageError([f"(whole input): not valid JSON: {error}"]) from None
    if not isinstance(data, Mapping):
        raise InvalidPackageError([f"(whole input): expected a JSON object, got {type(data)}"])
    version = data.get("version", PACKAGE_VERSION)
    if isinstance(version, str):
        check_version(version)
    kind = data.get("handoff_type")
    package_type = PACKAGE_TYPES.get(kind) if isinstance(kind, str) else None
    if package_type is None:
        raise InvalidPackageError(
            [f"handoff_type: expected one of {', '.join(PACKAGE_TYPES)} (got {kind!r})"]
        )
    try:
        package = package_type.model_validate(data)
    except ValidationError as error:
        raise InvalidPackageError(validation_problems(error), kind) from None
    assert isinstance(package, InitToExecuteContext | ExecuteToInitContext | ScenarioCompletion)
    return package
