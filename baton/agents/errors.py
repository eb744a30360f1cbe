"""The agents' errors: undelivered handoffs, damaged journals, lost leases, refused artifacts and
paths, compactions that stopped helping, a run's spend cap.

Each derives from `BatonError` (`baton.errors`, which re-exports them for users)."""

from __future__ import annotations

from baton.errors import RuntimeFailure, UsageError


class UndeliveredFailure(RuntimeFailure):
    """Raised by a tool when a message its round must send found no running receiver
    (a process starting or stopping): the round fails and is retried, and the model is not
    told it made a mistake."""

    def __init__(self, what: str, cause: BaseException) -> None:
        self.cause = cause
        super().__init__(f"{what} was not delivered: {cause}")


class JournalCorruptError(RuntimeFailure):
    """Raised when a conversation's journal cannot be replayed: a line other than the last is
    damaged (a torn last line is dropped), or a record does not follow from the ones before
    it. The message names the journal (file or Redis key), the actor, the conversation, the
    line and how to set the journal aside."""

    def __init__(
        self, where: object, line: int, *, actor: str, conversation: str, problem: str, fix: str
    ) -> None:
        self.path = str(where)
        self.line = line
        self.actor = actor
        self.conversation = conversation
        self.problem = problem
        super().__init__(
            f"journal {where} (actor {actor!r}, conversation {conversation!r}) is damaged at "
            f"line {line}: {problem} — {fix}"
        )


class JournalRecordError(RuntimeFailure):
    """Raised when a journal record does not follow from the ones before it (a step out of
    order, a field missing) as a conversation is rebuilt; the agent reports it as its
    journal's `JournalCorruptError`, which names the journal and what to do."""

    def __init__(self, line: int, problem: str) -> None:
        self.line = line
        self.problem = problem
        super().__init__(f"journal record {line} does not fit the ones before it: {problem}")


class LeaseLostError(RuntimeFailure):
    """Raised when a journal append finds that this process no longer owns the conversation
    (its lease expired and another worker took it over): the step is not written."""

    def __init__(self, actor: str, conversation: str) -> None:
        self.actor = actor
        self.conversation = conversation
        super().__init__(
            f"{actor} no longer holds the lease on conversation {conversation!r}: another "
            "worker owns it now; this process's step was not journaled"
        )


class InvalidArtifactError(UsageError):
    """Raised when an artifact file is missing, not JSON, or does not match its schema."""

    def __init__(self, path: object, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        super().__init__(
            f"artifact {path} is not valid: " + "; ".join(problems) + " — rewrite the file "
            "so these fields match the schema"
        )


class SandboxViolationError(UsageError):
    """Raised when a tool path leaves the workspace or enters a directory the runtime keeps."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"refused path {path!r}: {reason}")


class CompactionIneffectiveError(UsageError):
    """Raised when an agent's context is about to overflow its window and compacting no
    longer frees enough to help: the round cannot go on as configured, and trying it again
    would end the same way (docs/context.md, "Ineffective compactions")."""

    def __init__(self, actor: str, tokens: int, window: int, freed: list[int], floor: int) -> None:
        self.actor = actor
        self.tokens = tokens
        self.window = window
        super().__init__(
            f"{actor}: the context ({tokens} tokens) is about to overflow its {window}-token "
            f"window, and the last compactions freed only {', '.join(map(str, freed))} tokens "
            f"(under min_compaction_gain's {floor}); lower keep_recent_steps or "
            f"truncate_over_chars, raise compact_threshold, or start a new conversation"
        )


class SpendCapReachedFailure(RuntimeFailure):
    """Raised when a scenario has spent its cap (`max_cost_usd`, README.md "Configuration")
    and a model call of it is about to be made: the call is not made, the round is left
    open in its journal, and the scenario stops until the cap is raised."""

    def __init__(self, scenario: str, spent: float, cap: float) -> None:
        self.scenario = scenario
        self.spent = spent
        self.cap = cap
        super().__init__(
            f"budget: spent ${spent:.4f} of the ${cap:.4f} cap — raise max_cost_usd in "
            f"scenarios/{scenario}/scenario.toml ([scenario] in baton.toml for the default), "
            f"then `baton submit {scenario}` to continue"
        )
