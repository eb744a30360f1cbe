"""The models' errors: a retired model, a context over the window, a call that failed, an offline
script or recording that cannot answer.

Each derives from `BatonError` (`baton.errors`, which re-exports them for users)."""

from __future__ import annotations

from baton.errors import ConfigError, RuntimeFailure, UsageError


class RetiredModelError(ConfigError):
    """Raised when an agent's model is retired or unknown to the Models API, at start."""

    def __init__(self, actor: str, model: str, replacement: str | None, reason: str) -> None:
        self.actor = actor
        self.model = model
        self.replacement = replacement
        fix = (
            f'set [actors.{actor}] model = "{replacement}" in baton.toml'
            if replacement
            else f"set [actors.{actor}] model in baton.toml to a current model"
        )
        super().__init__(f"actor {actor!r}: model {model!r} {reason}; {fix}")


class ContextOverflowError(RuntimeFailure):
    """Raised when the API refused a prompt as too long; the actor compacts and retries."""

    def __init__(self, tokens: int, maximum: int) -> None:
        self.tokens = tokens
        self.maximum = maximum
        super().__init__(
            f"prompt is too long: {tokens} tokens > {maximum} maximum; compact the context"
        )


class ModelCallFailure(RuntimeFailure):
    """Raised when a model call failed after every retry it was allowed."""


class ScriptExhaustedError(UsageError):
    """Raised when a scripted model is asked for a turn its script has no reply for; `script`
    names a scenario's offline script file (docs/scenarios.md, "When the script runs out")."""

    def __init__(
        self,
        actor: str,
        turn: int,
        length: int,
        *,
        script: object | None = None,
        scenario: str | None = None,
    ) -> None:
        self.actor = actor
        self.turn = turn
        self.length = length
        if script is None:
            super().__init__(
                f"the model script for actor {actor!r} has {length} replies but turn {turn} "
                "was asked for; add replies to the script or give the ScriptedModel a policy"
            )
            return
        super().__init__(
            f"the offline script {script} has no turn {turn} for actor {actor!r} (it has "
            f"{length} turns) — extend the script, record a run to replay with `baton run "
            f"--record --submit {scenario or '<scenario>'}` (needs ANTHROPIC_API_KEY), or set "
            "ANTHROPIC_API_KEY to run on Claude"
        )


class ScriptFileError(ConfigError):
    """Raised when an offline script cannot be read (missing, not a regular file, too large)
    or is not a valid script: the message names the file and, where it can, the actor and
    turn or the line (docs/scenarios.md, "Offline script")."""

    def __init__(self, path: object, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(
            f"cannot load model script {path}: {problem} — fix the file (format: "
            'docs/scenarios.md, "Offline script")'
        )


class RecordingDivergedError(UsageError):
    """Raised when a replayed run asks for a reply its recording does not hold (it diverged
    from the recorded run: an edited prompt, input or recording; docs/recordings.md)."""

    def __init__(
        self, path: object, actor: str, conversation: str, turn: int, purpose: str
    ) -> None:
        self.path = str(path)
        self.actor = actor
        self.conversation = conversation
        self.turn = turn
        self.purpose = purpose
        scenario = conversation.partition("@")[0]
        super().__init__(
            f"replay diverged: {path} has no reply for actor {actor!r}, conversation "
            f"{conversation!r}, turn {turn} ({purpose}) — re-record it with ANTHROPIC_API_KEY "
            f"set: `baton run --record --submit {scenario}`"
        )


class RecordingFileError(UsageError):
    """Raised when a recording file cannot be read: a line other than the last is damaged,
    or (`line` None) the file itself is not one to read (not a regular file, too large)."""

    def __init__(self, path: object, line: int | None, problem: str) -> None:
        self.path = str(path)
        self.line = line
        if line is None:
            super().__init__(
                f"recording {path} {problem} — move it aside, or re-record with "
                "`baton run --record`"
            )
            return
        super().__init__(
            f"recording {path} line {line} is not a recorded reply ({problem}) — fix or "
            "delete that line, or re-record with `baton run --record`"
        )
