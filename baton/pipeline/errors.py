"""The pipeline's errors: handoff packages, scenarios and their records, the Scheduler, the command
line's own.

Each derives from `BatonError` (`baton.errors`, which re-exports them for users)."""

from __future__ import annotations

from collections.abc import Iterable

from baton._suggest import closest
from baton.errors import RuntimeFailure, StateFileError, UsageError


class PackageVersionError(UsageError):
    """Raised when a handoff package carries a major version this runtime does not know."""

    def __init__(self, received: str, supported: str) -> None:
        self.received = received
        self.supported = supported
        super().__init__(
            f"handoff package version {received!r} is not supported (this runtime speaks "
            f"{supported!r}); upgrade the receiver or resend with version {supported!r}"
        )


class DamagedScenarioError(StateFileError):
    """Raised when a scenario's record under `.baton/scheduler/` cannot be read back: the
    Scheduler refuses that scenario (submit, approve, reject, show) until the file is moved
    aside, and `baton status` lists it."""

    def __init__(self, scenario: str, path: object, problem: str, fix: str) -> None:
        self.scenario = scenario
        self.fix = fix
        super().__init__(path, problem, fix)


class InvalidPackageError(UsageError):
    """Raised when a handoff package does not validate; the message names each bad field."""

    def __init__(self, problems: list[str], handoff_type: str | None = None) -> None:
        self.problems = problems
        self.handoff_type = handoff_type
        kind = f"{handoff_type} package" if handoff_type else "handoff package"
        super().__init__(f"invalid {kind}; fix these fields and resend: " + "; ".join(problems))


class NoScenarioModelError(UsageError):
    """Raised when a scenario is submitted offline (no API key) and nothing can answer for
    it: it has neither a recording nor an offline script (docs/recordings.md)."""

    def __init__(self, scenario: str) -> None:
        self.scenario = scenario
        super().__init__(
            f"scenario {scenario!r} has no model to run on: set ANTHROPIC_API_KEY, or record a "
            f"run with `baton run --record --submit {scenario}` (it has neither "
            "recording.jsonl nor an offline_script)"
        )


class RecordingNeedsKeyError(UsageError):
    """Raised when a run is asked to record without an API key: offline nothing is recorded."""

    def __init__(self) -> None:
        super().__init__(
            "--record needs ANTHROPIC_API_KEY: it records Claude's replies, and without a key "
            "no model is called — set the key, or run without --record"
        )


class NoSchedulerError(UsageError):
    """Raised when a scenario request reaches a runtime in which no scheduler actor runs."""

    def __init__(self) -> None:
        super().__init__(
            "no 'scheduler' actor is running in this runtime, so it cannot take scenarios — "
            "it has stopped, or this process runs without it (`baton run --actors`); "
            "`baton status` shows why, and restarting `baton run` starts it again"
        )


class InvalidScenarioNameError(UsageError, ValueError):
    """Raised when a scenario name breaks the rule every scenario name follows (it names a
    folder and state files); a `ValueError` too, so pydantic reports it as a field error."""


class ScenarioExistsError(UsageError):
    """Raised when `baton new` is asked for a scenario whose folder already exists: it never
    writes over a user's files."""

    def __init__(self, scenario: str, path: object) -> None:
        self.scenario = scenario
        self.path = str(path)
        super().__init__(
            f"{path} already exists — edit it, or choose another name for the new scenario"
        )


class UnknownScenarioError(UsageError):
    """Raised when the scheduler knows no scenario by the requested name."""

    def __init__(self, scenario: str) -> None:
        self.scenario = scenario
        super().__init__(
            f"no scenario named {scenario!r} — submit it first with `baton submit {scenario}`"
        )


class NoScenarioFileError(UnknownScenarioError):
    """Raised when a scenario is submitted without a requirement and has no scenario.toml."""

    def __init__(self, scenario: str, path: object, known: Iterable[str] = ()) -> None:
        self.scenario = scenario
        self.path = str(path)
        guess = closest(scenario, known)
        hint = f"did you mean {guess!r}? Else create it" if guess else "create it"
        UsageError.__init__(
            self,
            f"no scenario {scenario!r}: {path} does not exist — {hint} or pass --requirement",
        )


class NoPendingHandoffError(UsageError):
    """Raised when approve or reject finds no Init → Execute handoff awaiting approval."""

    def __init__(self, scenario: str, phase: str) -> None:
        self.scenario = scenario
        self.phase = phase
        super().__init__(
            f"scenario {scenario!r} has no handoff awaiting approval (it is {phase}) — decide "
            "it once `baton status` lists it under pending approvals"
        )


class RunArchiveConflictError(UsageError):
    """Raised when a scenario submitted again cannot keep its previous run apart: that run's
    folder under `runs/` is already there while run outputs are still beside it (docs/handoffs.md,
    "Earlier runs"); nothing is moved and nothing starts."""

    def __init__(
        self, path: object, run: int, names: Iterable[str], *, aside: str | None = None
    ) -> None:
        self.path = str(path)
        self.run = run
        aside = aside or f"mv {path} {path}.old"  # a bucket's: its own command
        super().__init__(
            f"{path} already exists, so run {run}'s {', '.join(names)} cannot be kept there "
            f"without writing over it — move one of them aside (e.g. `{aside}`) and submit "
            "again"
        )


class ScenarioInputsError(UsageError):
    """Raised when a scenario is submitted with a remote store and its inputs cannot be read
    from its folder or copied into the store (docs/storage.md, "Scenario inputs"): the run
    does not start, and the submit says what to fix."""

    def __init__(self, scenario: str, store: str, problem: str) -> None:
        self.scenario = scenario
        self.store = store
        self.problem = problem
        super().__init__(
            f"scenario {scenario!r} was not started: its inputs could not be copied to "
            f"{store}: {problem} — fix that and submit it again"
        )


class CommandLineError(UsageError):
    """Raised when a `baton` command-line argument is malformed (the CLI exits with 2)."""


class SchedulerReplyFailure(RuntimeFailure):
    """Raised when the scheduler answered a scenario request with something not a ScenarioState."""

    def __init__(self, reply: object) -> None:
        super().__init__(
            f"the scheduler replied with {type(reply).__name__}, not ScenarioState — this is a "
            "bug in the scheduler actor; report it with the runtime's log"
        )
