"""Handoff tools: the agent hands off by calling a tool whose input schema is the package's.

`handoff_to_execute` (Init), `return_to_init` and `complete_scenario` (Execute). A call is
validated against the package (a bad field comes back as an `is_error` result naming it, so
the model corrects the call on its next step), every path the package references must exist
in the workspace (or, given a remote store, in it: an object or a folder of objects), and
only then are the paths registered (`register_paths`, the key-fact
ledger) and the package delivered (`deliver`, wired by the runtime to the Scheduler).
Registering comes first so a failed delivery never leaves a package sent but unrecorded.

`version`, `handoff_type` and `timestamp` are optional in the tool's schema: the first two
have defaults in the package already, and the timestamp is filled in from the tool's clock
when the model leaves it out, so the model only writes what it knows.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

import anyio
from pydantic import Field, create_model

from baton._log import get_logger
from baton.agents.agent_setup import Deliver, RegisterPaths
from baton.agents.errors import SandboxViolationError
from baton.agents.tools._object_files import stored_files
from baton.agents.tools._sandbox import Sandbox
from baton.agents.tools.protocol import ToolOutcome
from baton.pipeline.packages import (
    ContextPackage,
    ExecuteToInitContext,
    InitToExecuteContext,
    ScenarioCompletion,
)
from baton.storage.protocol import Storage

log = get_logger(__name__)

P = TypeVar("P", bound=ContextPackage)

Clock = Callable[[], datetime]

_FILLED_IN = "version, handoff_type and timestamp are filled in when you leave them out."
_RELATIVE = (
    "execution_output_dir is relative to the workspace root; every other path in the package "
    "is relative to execution_output_dir."
)


def utc_now() -> datetime:
    """The current time in UTC: the default clock of the handoff tools."""
    return datetime.now(UTC)


def _input_model(package: type[P], clock: Clock) -> type[P]:
    def now() -> str:
        return clock().isoformat(timespec="seconds")

    # A subclass whose only change is an optional timestamp: everything else in the schema
    # the model sees is the package's own.
    return create_model(
        f"{package.__name__}Input",
        __base__=package,
        timestamp=(
            str,
            Field(default_factory=now, description="ISO 8601; filled in when left out"),
        ),
    )


class HandoffTool(Generic[P]):
    """A tool that validates a handoff package, checks its paths, and delivers it."""

    def __init__(
        self,
        name: str,
        description: str,
        package: type[P],
        *,
        sandbox: Sandbox,
        deliver: Deliver,
        register_paths: RegisterPaths,
        clock: Clock = utc_now,
        storage: Storage | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.package = package
        self.input_model = _input_model(package, clock)
        self._sandbox = sandbox
        self._stored = stored_files(sandbox, storage)
        self._deliver = deliver
        self._register_paths = register_paths

    @property
    def input_schema(self) -> dict[str, Any]:
        schema = self.input_model.model_json_schema()
        schema["title"] = self.package.__name__
        return schema

    async def run(self, args: P) -> ToolOutcome:
        package = self.package.model_validate(args.model_dump())
        if self._stored is None:
            problems, found = await anyio.to_thread.run_sync(
                self._check_paths, package.referenced_paths()
            )
        else:
            problems, found = await self._check_stored(package.referenced_paths())
        if problems:
            hint = (
                f"\n{_RELATIVE}"
                if isinstance(package, ExecuteToInitContext | ScenarioCompletion)
                else ""
            )
            return ToolOutcome(
                f"{self.name}: nothing was sent; these referenced paths are not usable:\n"
                + "\n".join(problems)
                + f"{hint}\nWrite the missing files or correct the paths, then call again.",
                is_error=True,
            )
        paths = list(dict.fromkeys(found))
        registered = self._register_paths(paths)
        if inspect.isawaitable(registered):
            await registered
        await self._deliver(package)
        log.info("handoff.delivered", tool=self.name, handoff_type=package.handoff_type)
        return ToolOutcome(
            f"{self.name}: the {package.handoff_type} package was delivered to the Scheduler "
            f"({len(paths)} referenced paths checked). Your part is done: end your turn with "
            "a one-line summary."
        )

    def _check_paths(self, paths: Iterable[str]) -> tuple[list[str], list[str]]:
        """The problems with `paths` (one line each), and the paths found (one worker-thread
        call for them all, each one walk of the sandbox)."""
        problems: list[str] = []
        # The package's own spelling is what gets registered: it is what the receiver reads.
        found: list[str] = []
        for path in paths:
            try:
                with self._sandbox.walk(path) as here:
                    exists = here.final() is not None
            except SandboxViolationError as error:
                problems.append(f"- {path}: {error.reason}")
                continue
            if not exists:
                problems.append(f"- {path}: does not exist")
                continue
            found.append(path)
        return problems, found

    async def _check_stored(self, paths: Iterable[str]) -> tuple[list[str], list[str]]:
        """`_check_paths` in the remote store: each path an object or a folder of objects."""
        assert self._stored is not None
        problems: list[str] = []
        found: list[str] = []
        for path in paths:
            try:
                _, key = self._stored.key(path)
            except SandboxViolationError as error:
                problems.append(f"- {path}: {error.reason}")
                continue
            if not await self._stored.exists(key):
                problems.append(f"- {path}: does not exist")
                continue
            found.append(path)
        return problems, found


def handoff_to_execute(
    sandbox: Sandbox,
    *,
    deliver: Deliver,
    register_paths: RegisterPaths,
    clock: Clock = utc_now,
    storage: Storage | None = None,
) -> HandoffTool[InitToExecuteContext]:
    """Init's tool: hand the design (an `InitToExecuteContext`) to the Execute Agent."""
    return HandoffTool(
        "handoff_to_execute",
        "Hand the finished scenario design to the Execute Agent (through the Scheduler; a "
        "human may approve it first). The input is an InitToExecuteContext package: pass "
        "paths, never file contents. Every path in design_artifacts is relative to the "
        f"workspace root and must exist. {_FILLED_IN} After it succeeds, end your turn.",
        InitToExecuteContext,
        sandbox=sandbox,
        deliver=deliver,
        register_paths=register_paths,
        clock=clock,
        storage=storage,
    )


def return_to_init(
    sandbox: Sandbox,
    *,
    deliver: Deliver,
    register_paths: RegisterPaths,
    clock: Clock = utc_now,
    storage: Storage | None = None,
) -> HandoffTool[ExecuteToInitContext]:
    """Execute's tool: return to Init with an `ExecuteToInitContext` when the design must change."""
    return HandoffTool(
        "return_to_init",
        "Return to the Init Agent because the design (Layer 1) must change. The input is an "
        "ExecuteToInitContext package: paths and an index of the failed samples, never file "
        f"contents. {_RELATIVE} Every path must exist. {_FILLED_IN} "
        "After it succeeds, end your turn.",
        ExecuteToInitContext,
        sandbox=sandbox,
        deliver=deliver,
        register_paths=register_paths,
        clock=clock,
        storage=storage,
    )


def complete_scenario(
    sandbox: Sandbox,
    *,
    deliver: Deliver,
    register_paths: RegisterPaths,
    clock: Clock = utc_now,
    storage: Storage | None = None,
) -> HandoffTool[ScenarioCompletion]:
    """Execute's tool: report with a `ScenarioCompletion` that an iteration met the criteria."""
    return HandoffTool(
        "complete_scenario",
        "Report that an iteration met the success criteria and the scenario is done. The "
        "input is a ScenarioCompletion package: the iteration directory, its success rate as "
        f"a fraction, its statistics and its report paths. {_RELATIVE} Every path must exist. "
        f"{_FILLED_IN} After it succeeds, end your turn.",
        ScenarioCompletion,
        sandbox=sandbox,
        deliver=deliver,
        register_paths=register_paths,
        clock=clock,
        storage=storage,
    )
