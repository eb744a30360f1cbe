"""The error tree: every error baton raises derives from `BatonError`.

`UsageError` is the caller's mistake (bad config, unknown actor, invalid package): fix the
input and try again. `RuntimeFailure` is something that went wrong while running: retry,
inspect the dead letters or the logs.
"""

from __future__ import annotations

import errno
import json
import resource
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

# The module, not its class: every exception class named here is a BatonError.
import pydantic

from baton._no_runtime import no_runtime_message


class BatonError(Exception):
    """Raised by baton for any error it reports; catch this to catch them all."""


class UsageError(BatonError):
    """Raised when the caller asked for something baton cannot do as asked."""


class RuntimeFailure(BatonError):
    """Raised when something failed while the runtime was running."""


def validation_problems(
    error: pydantic.ValidationError | Iterable[Mapping[str, Any]],
    *,
    show_input: bool = True,
    unknown_keys: bool = False,
) -> list[str]:
    """One line per problem of a failed pydantic validation: the field's dotted location and
    what is wrong with it, in the words every baton error that lists problems uses.

    `show_input` adds what was sent for a wrong value (not for a missing one), cut to 60
    characters, so a model correcting its tool call or package sees what it got wrong;
    `unknown_keys` words a key the model forbids as `unknown key 'a.b'`, a config typo.
    """
    if isinstance(error, pydantic.ValidationError):
        error = error.errors(include_url=False)
    problems = []
    for item in error:
        loc = item.get("loc", ())
        where = ".".join(str(part) for part in loc)
        if unknown_keys and item.get("type") == "extra_forbidden":
            problems.append(f"unknown key {where!r}")
            continue
        line = f"{where or '(whole input)'}: {item.get('msg', 'invalid')}"
        if show_input and item.get("type") != "missing" and loc:
            sent = json.dumps(item.get("input"), ensure_ascii=False, default=str)
            line += f" (got {sent if len(sent) <= 60 else sent[:57] + '...'})"
        problems.append(line)
    return problems


# --- usage errors -------------------------------------------------------------------------


class UnknownActorError(UsageError):
    """Raised when a message is addressed to an actor name that is not registered."""

    def __init__(self, name: str, known: list[str] | None = None) -> None:
        self.name = name
        hint = f"; known actors: {', '.join(sorted(known))}" if known else ""
        super().__init__(f"no actor named {name!r}{hint} — spawn it first or check the name")


class ActorExistsError(UsageError):
    """Raised when spawning an actor under a name that is already taken."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"an actor named {name!r} is already running — pick another name")


class UnhandledMessageError(UsageError):
    """Raised when an actor has no handler for the type of message it was asked to handle."""

    def __init__(self, actor: str, message_type: str, handled: list[str] | None = None) -> None:
        self.actor = actor
        self.message_type = message_type
        hint = f"; it handles: {', '.join(sorted(handled))}" if handled else ""
        super().__init__(f"actor {actor!r} has no handler for {message_type!r}{hint}")


class InvalidMessageError(UsageError):
    """Raised when a message payload does not validate against its declared type."""


class ConfigError(UsageError):
    """Raised when configuration is invalid; the message names the offending key."""


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


class InvalidRequestError(UsageError):
    """Raised when a Messages API request breaks one of the API's documented rules."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid Messages API request: " + "; ".join(problems))


class PackageVersionError(UsageError):
    """Raised when a handoff package carries a major version this runtime does not know."""

    def __init__(self, received: str, supported: str) -> None:
        self.received = received
        self.supported = supported
        super().__init__(
            f"handoff package version {received!r} is not supported (this runtime speaks "
            f"{supported!r}); upgrade the receiver or resend with version {supported!r}"
        )


# --- runtime failures ----------------------------------------------------------------------


class ActorDeadError(RuntimeFailure):
    """Raised when a message was sent to, or awaited from, an actor that has stopped."""

    def __init__(self, name: str, reason: str = "stopped") -> None:
        self.name = name
        super().__init__(f"actor {name!r} is not running ({reason}); respawn it or check status")


class UndeliveredFailure(RuntimeFailure):
    """Raised by a tool when a message its round must send found no running receiver
    (a process starting or stopping): the round fails and is retried, and the model is not
    told it made a mistake."""

    def __init__(self, what: str, cause: BaseException) -> None:
        self.cause = cause
        super().__init__(f"{what} was not delivered: {cause}")


class HandlerFailedError(RuntimeFailure):
    """Raised when the handler of an ask raised on every attempt; the cause is `__cause__`."""

    def __init__(self, actor: str, message_type: str, cause: BaseException) -> None:
        self.actor = actor
        self.message_type = message_type
        self.cause = cause
        super().__init__(
            f"actor {actor!r} failed handling {message_type!r}: {type(cause).__name__}: {cause}"
        )


class AskTimeoutError(RuntimeFailure, TimeoutError):
    """Raised when an ask got no reply within its timeout; a late reply is dropped."""

    def __init__(self, actor: str, timeout: float) -> None:
        self.actor = actor
        self.timeout = timeout
        super().__init__(f"actor {actor!r} did not reply within {timeout:g}s; raise the timeout")


class MailboxBlockedError(RuntimeFailure):
    """Raised when `send_nowait` cannot finish without waiting; `await send()` instead.

    A durable mailbox raises it for every `send_nowait`: its write goes through a worker
    thread, and the message must be stored before the sender goes on."""


class MailboxFullError(MailboxBlockedError):
    """Raised when `send_nowait` finds the mailbox at capacity; `send` would wait instead."""

    def __init__(self, name: str, capacity: int) -> None:
        self.name = name
        self.capacity = capacity
        super().__init__(
            f"mailbox {name!r} is full ({capacity} messages); use send() to wait for room"
        )


class MailboxClosedError(RuntimeFailure):
    """Raised when sending to, or receiving from, a mailbox that has been closed."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"mailbox {name!r} is closed")


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


class SummaryFailure(RuntimeFailure):
    """Raised when a compaction summary could not be produced or did not validate."""


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


_F = TypeVar("_F", bound=BaseException)


class DiskFullFailure(RuntimeFailure):
    """Raised when a write failed for lack of disk space, or of disk quota: the runtime
    refuses new work until there is room again, keeps everything already stored, and resumes
    by itself (README.md, "After a full disk or a damaged file").

    A used-up quota (EDQUOT) is waited out as a full disk is: deleting files frees a quota as
    it frees a disk. A quota smaller than the one file being written looks the same to the
    writer and so waits too, until the quota is raised; the message names the quota, and
    `baton status` shows the wait, so it is not a silent hang."""

    def __init__(self, path: object, detail: str, *, quota: bool = False) -> None:
        self.path = str(path)
        self.detail = detail
        self.quota = quota
        if quota:
            what = f"disk quota exceeded writing {path}"
            fix = "free space within your quota or raise the quota"
        else:
            what, fix = f"no space left to write {path}", "free disk space"
        super().__init__(
            f"{what} ({detail}): baton refuses new work until there is room — {fix}; queued "
            "messages are kept and work resumes by itself"
        )


def file_size_limit() -> int | None:
    """The largest file this process may write, in bytes (RLIMIT_FSIZE, `ulimit -f`), or None
    when it has no such limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else soft


class FileTooLargeFailure(RuntimeFailure):
    """Raised when a write failed because the file may not grow any larger (EFBIG): it
    reached the process's file-size limit (`ulimit -f`) or the largest file its filesystem
    allows. No wait makes room for it, so, unlike `DiskFullFailure`, the work that needed the
    write fails once, with this reason (README.md, "After a full disk or a damaged file")."""

    def __init__(self, path: object, detail: str) -> None:
        self.path = str(path)
        self.detail = detail
        self.limit = file_size_limit()  # read now: the limit the write met
        if self.limit is not None:
            why = f"this process may write files of at most {self.limit:,} bytes (ulimit -f)"
            fix = "raise the limit (`ulimit -f unlimited`) and start baton again"
        else:
            why = "it has reached the largest file its filesystem allows"
            fix = "move the workspace to a filesystem that allows larger files"
        super().__init__(
            f"{path} cannot grow ({detail}): {why}; waiting does not make room, so the work "
            f"that needed the write failed — {fix}"
        )


# The OS's words for "no room yet": the disk is full, the quota is used up. EFBIG (the file
# may not grow) is not one of them: no wait ends it (`FileTooLargeFailure`).
SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def write_failure(path: object, error: OSError) -> DiskFullFailure | FileTooLargeFailure | None:
    """The failure naming `path` that a write refused for room (`error`) is: the file may
    not grow (EFBIG), or the disk or the quota is full; None for any other `OSError`."""
    if error.errno == errno.EFBIG:
        return FileTooLargeFailure(path, error.strerror or str(error))
    if error.errno in SPACE_ERRNOS:
        quota = error.errno == errno.EDQUOT
        return DiskFullFailure(path, error.strerror or str(error), quota=quota)
    return None


def _find(error: BaseException, kind: type[_F]) -> _F | None:
    """The `kind` of failure that `error` is, or was caused by (an `OSError` refused for
    room becomes one naming its file), looking into groups; None when it is none."""
    seen: set[int] = set()
    pending = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, kind):
            return current
        if isinstance(current, OSError):
            found = write_failure(current.filename or "a file", current)
            if isinstance(found, kind):
                return found
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return None


def out_of_space(error: BaseException) -> DiskFullFailure | None:
    """The `DiskFullFailure` that `error` is, or was caused by (an `OSError` for space
    becomes one naming its file), looking into groups; None when it is no such failure."""
    return _find(error, DiskFullFailure)


def file_too_large(error: BaseException) -> FileTooLargeFailure | None:
    """The `FileTooLargeFailure` that `error` is, or was caused by (an `OSError` EFBIG becomes
    one naming its file), looking into groups; None when it is no such failure."""
    return _find(error, FileTooLargeFailure)


def unretriable(error: Exception) -> BatonError | None:
    """The error that settles a failed message at once, when retrying cannot help: a
    `UsageError` (the request itself is wrong) or the `FileTooLargeFailure` it was caused by
    (the file may not grow); None for any other failure."""
    if isinstance(error, UsageError):
        return error
    return file_too_large(error)


class StateFileError(UsageError):
    """Raised when a file baton keeps (under `.baton/`) is damaged, of the wrong kind or
    unreadable: the message names the file and what to do with it."""

    def __init__(self, path: object, problem: str, fix: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{path} {problem} — {fix}")


class DamagedScenarioError(StateFileError):
    """Raised when a scenario's record under `.baton/scheduler/` cannot be read back: the
    Scheduler refuses that scenario (submit, approve, reject, show) until the file is moved
    aside, and `baton status` lists it."""

    def __init__(self, scenario: str, path: object, problem: str, fix: str) -> None:
        self.scenario = scenario
        self.fix = fix
        super().__init__(path, problem, fix)


class MemoryInputError(UsageError):
    """Raised when something asked of long-term memory is malformed: empty or oversized
    content, a bad tag, a limit below one (docs/memory.md)."""


class UnknownMemoryError(UsageError):
    """Raised when a long-term memory entry is asked for by an id the store does not hold."""

    def __init__(self, entry_id: str) -> None:
        self.entry_id = entry_id
        super().__init__(
            f"no memory entry with id {entry_id!r} — `baton memory list` shows the ids"
        )


class MemoryFileError(StateFileError):
    """Raised when the long-term memory store's file is damaged beyond what baton repairs
    by itself (docs/memory.md, "Files")."""


class MissingExtraError(UsageError):
    """Raised when a feature needs an optional dependency that is not installed."""

    def __init__(self, feature: str, package: str, extra: str) -> None:
        self.feature = feature
        self.package = package
        self.extra = extra
        super().__init__(
            f"{feature} needs the optional package {package!r}: pip install 'baton[{extra}]'"
        )


class InvalidPackageError(UsageError):
    """Raised when a handoff package does not validate; the message names each bad field."""

    def __init__(self, problems: list[str], handoff_type: str | None = None) -> None:
        self.problems = problems
        self.handoff_type = handoff_type
        kind = f"{handoff_type} package" if handoff_type else "handoff package"
        super().__init__(f"invalid {kind}; fix these fields and resend: " + "; ".join(problems))


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


# --- the control API, the client and `baton run` ---------------------------------------


class NoRuntimeError(UsageError):
    """Raised when no baton process answers on the workspace's control socket."""

    def __init__(self, workspace: Path | str) -> None:
        self.workspace = str(workspace)
        super().__init__(no_runtime_message(workspace))


class WorkspaceBusyError(UsageError):
    """Raised when another live baton process already holds the workspace."""

    def __init__(self, workspace: Path | str, pid: int | None) -> None:
        self.workspace = str(workspace)
        self.pid = pid
        holder = f"a baton runtime (pid {pid})" if pid else "another baton runtime"
        super().__init__(
            f"{holder} already runs in {workspace} — stop it with "
            f"`baton stop --workspace {workspace}` or use another workspace"
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

    def __init__(self, scenario: str, path: object) -> None:
        self.scenario = scenario
        self.path = str(path)
        UsageError.__init__(
            self,
            f"no scenario {scenario!r}: {path} does not exist — create it or pass --requirement",
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


class CommandLineError(UsageError):
    """Raised when a `baton` command-line argument is malformed (the CLI exits with 2)."""


class ControlRequestError(UsageError):
    """Raised when a request to the control API is malformed; the message names what to fix."""


class InvalidPayloadError(InvalidMessageError):
    """Raised when a message payload does not validate against the actor's message type."""


class MailboxStillFullError(MailboxFullError):
    """Raised when a message told over the control API found the mailbox full until its timeout."""

    def __init__(self, name: str, capacity: int, timeout: float) -> None:
        RuntimeFailure.__init__(
            self,
            f"mailbox {name!r} stayed full ({capacity} messages) for {timeout:g}s — retry "
            "later, or pass a longer timeout",
        )
        self.name = name
        self.capacity = capacity
        self.timeout = timeout


class SchedulerReplyFailure(RuntimeFailure):
    """Raised when the scheduler answered a scenario request with something not a ScenarioState."""

    def __init__(self, reply: object) -> None:
        super().__init__(
            f"the scheduler replied with {type(reply).__name__}, not ScenarioState — this is a "
            "bug in the scheduler actor; report it with the runtime's log"
        )


class ScenarioFailure(RuntimeFailure):
    """Raised when `baton run --exit-when-idle` ends and a scenario it ran ended `failed`, so
    the command exits 1 and a script or CI can tell (the `ended` lines above say why)."""

    def __init__(self, failed: Sequence[str]) -> None:
        self.failed = list(failed)
        names = ", ".join(repr(name) for name in self.failed)
        super().__init__(
            f"{len(self.failed)} scenario(s) failed: {names} — see the `ended` line of each "
            "above, and `baton tail --scenario NAME` for what led there"
        )


class RemoteFailure(RuntimeFailure):
    """Raised when the runtime process reported an error this client has no class for.

    It is also the `cause` of a `HandlerFailedError` raised by the client: the handler's own
    exception lives in the runtime process; `remote_type` names its class.
    """

    def __init__(self, message: str, remote_type: str = "Exception") -> None:
        self.remote_type = remote_type
        super().__init__(message)


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
