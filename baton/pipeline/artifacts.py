"""The artifact store: an iteration's files, validated on write and on read
(docs/handoffs.md, "Artifact layout"), in the workspace folder or, with `[storage] url` set,
in the bucket under the same keys (docs/storage.md, "What is stored where").

Layout, relative to the workspace::

    scenarios/<name>/execution_outputs/iteration_N/
        samples/<ID>.json                          Sample
        execution_traces/<ID>_trace.json           ExecutionTrace
        evaluation_results/<ID>_eval.json          EvaluationResult
        attribution_analysis/<ID>_attribution.json AttributionAnalysis
        failure_summary.json                       FailureSummary
        layer1_problems_report.json                Layer1ProblemsReport

Every write is atomic (on disk: temp file, fsync, rename, fsync of the directory; in a
bucket: one whole PUT) and every read and write is async. A file at a known place in the
layout must match that place's schema, and a per-sample file's `sample_id` must match its
file name.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath
from typing import TYPE_CHECKING, Final, TypeVar

import anyio
from pydantic import BaseModel, ValidationError

from baton._regular_files import read_at
from baton.agents._artifact_io import TEMP_SUFFIX, write_at, write_atomic
from baton.agents._dir_walk import Walk, inside, walk
from baton.agents.errors import InvalidArtifactError, SandboxViolationError
from baton.errors import UsageError, validation_problems
from baton.pipeline._artifact_models import (
    AttributionAnalysis,
    CheckerResult,
    EvaluationResult,
    ExecutionTrace,
    FailureSummary,
    Layer1Problem,
    Layer1ProblemsReport,
    LLMJudgement,
    ModificationPriority,
    Sample,
    Severity,
    StateSnapshot,
    SuggestedFix,
    ToolCallRecord,
    TraceMessage,
)
from baton.pipeline.scenario_names import check_scenario_name
from baton.storage.errors import ObjectNotFoundError, StoragePathError
from baton.storage.keys import check_key
from baton.storage.local import remote_store

if TYPE_CHECKING:
    from baton.storage.protocol import Storage

__all__ = [
    "ITERATION_SUBDIRS",
    "TEMP_SUFFIX",
    "ArtifactStore",
    "AttributionAnalysis",
    "CheckerResult",
    "EvaluationResult",
    "ExecutionTrace",
    "FailureSummary",
    "IterationLayout",
    "LLMJudgement",
    "Layer1Problem",
    "Layer1ProblemsReport",
    "ModificationPriority",
    "Sample",
    "Severity",
    "StateSnapshot",
    "SuggestedFix",
    "ToolCallRecord",
    "TraceMessage",
    "artifact_model",
    "validate_artifact",
    "write_atomic",
]

M = TypeVar("M", bound=BaseModel)

ITERATION_SUBDIRS: Final = (
    "samples",
    "execution_traces",
    "evaluation_results",
    "attribution_analysis",
)
_ITERATION_DIR = re.compile(r"^iteration_(\d+)$")
_IN_ITERATION = r"(?:^|/)execution_outputs/iteration_\d+/"
_KINDS: Final[tuple[tuple[re.Pattern[str], type[BaseModel]], ...]] = (
    (re.compile(_IN_ITERATION + r"layer1_problems_report\.json$"), Layer1ProblemsReport),
    (re.compile(_IN_ITERATION + r"failure_summary\.json$"), FailureSummary),
    (re.compile(_IN_ITERATION + r"samples/(?P<id>[^/]+)\.json$"), Sample),
    (re.compile(_IN_ITERATION + r"execution_traces/(?P<id>[^/]+)_trace\.json$"), ExecutionTrace),
    (re.compile(_IN_ITERATION + r"evaluation_results/(?P<id>[^/]+)_eval\.json$"), EvaluationResult),
    (
        re.compile(_IN_ITERATION + r"attribution_analysis/(?P<id>[^/]+)_attribution\.json$"),
        AttributionAnalysis,
    ),
)

MAX_ARTIFACT_BYTES = 32 * 1024 * 1024
"""The largest artifact file read (a report or summary is a few hundred KB at most)."""


def _match(path: str | PurePath) -> tuple[type[BaseModel], str | None] | None:
    text = PurePath(path).as_posix()
    for pattern, model in _KINDS:
        found = pattern.search(text)
        if found:
            return model, found.groupdict().get("id")
    return None


def artifact_model(path: str | PurePath) -> type[BaseModel] | None:
    """The schema of the file at `path` if it is a known place in the layout, else None."""
    matched = _match(path)
    return matched[0] if matched else None


ARTIFACT_PLACES = (
    "Files at known places of an iteration (samples/, execution_traces/, "
    "evaluation_results/, attribution_analysis/, failure_summary.json, "
    "layer1_problems_report.json) must match their schema or nothing is written."
)
"""What Write's description says of the places `check_artifact` judges."""


def check_artifact(path: str, content: str) -> bool:
    """Write's check (`baton.agents.tools.files.ContentCheck`): whether `path` is a known
    place of the layout, its content validated; `InvalidArtifactError` when it does not fit."""
    model = artifact_model(path)
    if model is None:
        return False
    validate_artifact(path, content, model)
    return True


def validate_artifact(path: str | PurePath, data: str | bytes, model: type[M]) -> M:
    """Parse JSON `data` meant for `path` as `model`; raise `InvalidArtifactError` if it is not.

    Beyond the schema, a per-sample file's `sample_id` must match its file name.
    """
    try:
        artifact = model.model_validate_json(data)
    except ValidationError as error:
        raise InvalidArtifactError(path, validation_problems(error)) from None
    matched = _match(path)
    expected_id = matched[1] if matched else None
    actual_id = getattr(artifact, "sample_id", None)
    if expected_id is not None and actual_id != expected_id:
        raise InvalidArtifactError(
            path, [f"sample_id: {actual_id!r} does not match the file name ({expected_id!r})"]
        )
    return artifact


@dataclass(frozen=True)
class IterationLayout:
    """The workspace-relative paths of one iteration's outputs."""

    scenario: str
    iteration: int

    @property
    def directory(self) -> PurePosixPath:
        """`scenarios/<name>/execution_outputs/iteration_N`."""
        return PurePosixPath(
            "scenarios", self.scenario, "execution_outputs", f"iteration_{self.iteration}"
        )

    @property
    def subdirectories(self) -> list[PurePosixPath]:
        """The four per-sample directories, in layout order."""
        return [self.directory / name for name in ITERATION_SUBDIRS]

    @property
    def failure_summary(self) -> PurePosixPath:
        return self.directory / "failure_summary.json"

    @property
    def layer1_problems_report(self) -> PurePosixPath:
        return self.directory / "layer1_problems_report.json"

    def sample(self, sample_id: str) -> PurePosixPath:
        return self.directory / "samples" / f"{sample_id}.json"

    def trace(self, sample_id: str) -> PurePosixPath:
        return self.directory / "execution_traces" / f"{sample_id}_trace.json"

    def evaluation(self, sample_id: str) -> PurePosixPath:
        return self.directory / "evaluation_results" / f"{sample_id}_eval.json"

    def attribution(self, sample_id: str) -> PurePosixPath:
        return self.directory / "attribution_analysis" / f"{sample_id}_attribution.json"

    def relative(self, path: PurePosixPath) -> str:
        """`path` relative to the iteration directory, as `ExecuteToInitContext` wants it."""
        return path.relative_to(self.directory).as_posix()


class ArtifactStore:
    """Reads and writes a workspace's artifacts; paths are relative to the workspace root,
    and, with a remote `storage`, are the keys of the objects in it."""

    def __init__(self, workspace: Path, storage: Storage | None = None) -> None:
        self.workspace = workspace
        self.storage = remote_store(storage)

    def iteration(self, scenario: str, iteration: int) -> IterationLayout:
        """The layout of one iteration (nothing is created)."""
        check_scenario_name(scenario)  # the one rule (baton.pipeline.scenario_names)
        if iteration < 1:
            raise UsageError(f"iteration numbers start at 1, got {iteration}")
        return IterationLayout(scenario, iteration)

    async def create_iteration(self, scenario: str, iteration: int) -> IterationLayout:
        """Create the iteration directory and its four subdirectories; return its layout (a
        bucket has no empty folders: there, an iteration exists once a file is in it)."""
        layout = self.iteration(scenario, iteration)
        if self.storage is not None:
            return layout
        for directory in layout.subdirectories:
            await anyio.Path(self.workspace / directory).mkdir(parents=True, exist_ok=True)
        return layout

    async def iterations(self, scenario: str) -> list[int]:
        """The iteration numbers that exist for the scenario, ascending."""
        outputs = self.iteration(scenario, 1).directory.parent
        if self.storage is not None:
            listing = await self.storage.list(outputs.as_posix(), recursive=False)
            found = [_ITERATION_DIR.match(name) for name in listing.folders]
            return sorted(int(m.group(1)) for m in found if m)
        folder = anyio.Path(self.workspace / outputs)
        if not await folder.is_dir():
            return []
        found = [_ITERATION_DIR.match(entry.name) async for entry in folder.iterdir()]
        return sorted(int(m.group(1)) for m in found if m)

    async def next_iteration(self, scenario: str) -> int:
        """One past the last iteration on disk (1 when there is none)."""
        existing = await self.iterations(scenario)
        return existing[-1] + 1 if existing else 1

    def _walk(self, path: str | PurePath) -> Walk:
        # A package the model wrote names these paths, and anything on the machine may swap a
        # folder on the way for a link: walked by descriptor, as the tools' sandbox walks
        # (docs/handoffs.md, "Sandbox"). Blocking; the caller closes the walk.
        spelled = PurePosixPath(PurePath(path).as_posix())
        root = Path(os.path.realpath(self.workspace))
        given = PurePosixPath(self.workspace.absolute())
        parts = inside(spelled, (PurePosixPath(root), given)) if spelled.root else spelled.parts
        if parts is None or os.path.normpath(PurePosixPath(*parts)).startswith(".."):
            raise SandboxViolationError(str(path), "artifacts live inside the workspace")
        return walk(root, parts, str(path), aliases=(given,))

    def _key(self, path: str | PurePath) -> str:
        """The object key of workspace path `path`: the sandbox's logical rules, with no
        folder to walk (docs/handoffs.md, "Sandbox")."""
        spelled = PurePosixPath(PurePath(path).as_posix())
        given = PurePosixPath(self.workspace.absolute())
        parts = inside(spelled, (given,)) if spelled.root else spelled.parts
        if parts is None or not parts or os.path.normpath(PurePosixPath(*parts)).startswith(".."):
            raise SandboxViolationError(str(path), "artifacts live inside the workspace")
        try:
            return check_key("/".join(parts))
        except StoragePathError as refused:
            raise SandboxViolationError(str(path), refused.problem) from None

    async def _read_object(self, path: str | PurePath) -> bytes:
        assert self.storage is not None
        key = self._key(path)
        found = await self.storage.stat(key)
        if found is None:
            raise FileNotFoundError(path)
        if found.size > MAX_ARTIFACT_BYTES:
            raise ValueError(f"{path} is over {MAX_ARTIFACT_BYTES:,} bytes")
        try:
            return await self.storage.read(key)
        except ObjectNotFoundError:
            raise FileNotFoundError(path) from None

    def _write_file(self, path: str | PurePath, data: bytes) -> Path:
        with self._walk(path) as here:
            write_at(*here.enter_missing(), data)
            return self.workspace.joinpath(*here.resolved)

    def _read_file(self, path: str | PurePath) -> bytes:
        with self._walk(path) as here:
            if not here.rest:
                raise IsADirectoryError(path)
            if len(here.rest) > 1:
                raise FileNotFoundError(path)
            return read_at(here.fd, here.rest[0], str(path), MAX_ARTIFACT_BYTES)

    async def write(self, path: str | PurePath, artifact: BaseModel) -> PurePath:
        """Validate `artifact` for `path` and write it atomically as JSON; return the file
        (its key, in a remote store)."""
        expected = artifact_model(path)
        if expected is not None and not isinstance(artifact, expected):
            raise InvalidArtifactError(
                path,
                [f"this place holds a {expected.__name__}, not a {type(artifact).__name__}"],
            )
        data = artifact.model_dump_json(indent=2)
        # Re-validated from its JSON, so a model mutated after construction cannot put a file
        # on disk that would fail to read back.
        validate_artifact(path, data, type(artifact))
        if self.storage is not None:
            key = self._key(path)
            await self.storage.write(key, data.encode())
            return PurePosixPath(key)
        return await anyio.to_thread.run_sync(self._write_file, path, data.encode())

    async def read(self, path: str | PurePath, model: type[M]) -> M:
        """Read the file at `path` as `model`; raise `InvalidArtifactError` if it does not fit."""
        try:
            # A package names the path: it may be a FIFO or a link planted to block or to
            # read from outside (docs/handoffs.md, "Sandbox").
            if self.storage is not None:
                data = await self._read_object(path)
            else:
                data = await anyio.to_thread.run_sync(self._read_file, path)
        except (FileNotFoundError, NotADirectoryError):
            raise InvalidArtifactError(path, ["the file does not exist"]) from None
        except IsADirectoryError:
            raise InvalidArtifactError(path, ["it is a directory, not a file"]) from None
        except ValueError as refused:
            raise InvalidArtifactError(path, [str(refused)]) from None
        return validate_artifact(path, data, model)

    async def read_report(self, path: str | PurePath) -> Layer1ProblemsReport:
        """Read a `layer1_problems_report.json`."""
        return await self.read(path, Layer1ProblemsReport)

    async def read_failure_summary(self, path: str | PurePath) -> FailureSummary:
        """Read a `failure_summary.json`."""
        return await self.read(path, FailureSummary)
