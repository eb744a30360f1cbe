"""The error tree: every error baton raises derives from `BatonError`.

`UsageError` is the caller's mistake (bad config, unknown actor, invalid package): fix the
input and try again. `RuntimeFailure` is something that went wrong while running: retry,
inspect the dead letters or the logs.

Here: the root, the errors of every layer (a bad config, a damaged state file, a full disk,
a file that may not grow) and how an `OSError` of a write is told apart. Each layer's own
errors live with it (`baton.runtime.errors`, `baton.pipeline.errors`, ...); this module
re-exports every one, so `from baton.errors import UnknownScenarioError` works for users.
"""

from __future__ import annotations

import errno
import json
import resource
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, get_args, get_origin

# The module, not its class: every exception class named here is a BatonError.
import pydantic

from baton._lazy import lazy_exports
from baton._suggest import did_you_mean


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
    schema: type[pydantic.BaseModel] | None = None,
) -> list[str]:
    """One line per problem of a failed pydantic validation: the field's dotted location and
    what is wrong with it, in the words every baton error that lists problems uses.

    `show_input` adds what was sent for a wrong value (not for a missing one), cut to 60
    characters, so a model correcting its tool call or package sees what it got wrong;
    `unknown_keys` words a key the model forbids as `unknown key 'a.b'`, a config typo, and
    with the `schema` that was validated against names the key it probably meant.
    """
    if isinstance(error, pydantic.ValidationError):
        error = error.errors(include_url=False)
    problems = []
    for item in error:
        loc = item.get("loc", ())
        where = ".".join(str(part) for part in loc)
        if unknown_keys and item.get("type") == "extra_forbidden":
            known = _keys_at(schema, loc[:-1]) if schema is not None and loc else []
            problems.append(f"unknown key {where!r}{did_you_mean(str(loc[-1]), known)}")
            continue
        line = f"{where or '(whole input)'}: {item.get('msg', 'invalid')}"
        if show_input and item.get("type") != "missing" and loc:
            sent = json.dumps(item.get("input"), ensure_ascii=False, default=str)
            line += f" (got {sent if len(sent) <= 60 else sent[:57] + '...'})"
        problems.append(line)
    return problems


def _keys_at(schema: type[pydantic.BaseModel], path: Sequence[Any]) -> list[str]:
    """The keys `schema` takes at `path` (a validation error's location), through nested
    models and the values of `dict[str, Model]` fields; none where it cannot tell."""
    model: Any = schema
    rest = list(path)
    while rest:
        if not (isinstance(model, type) and issubclass(model, pydantic.BaseModel)):
            return []
        field = model.model_fields.get(str(rest.pop(0)))
        if field is None:
            return []
        model = field.annotation
        if get_origin(model) is dict and rest:
            rest.pop(0)  # the dict's own key: its value's keys are what follows
            model = get_args(model)[1]
    if isinstance(model, type) and issubclass(model, pydantic.BaseModel):
        return [field.alias or name for name, field in model.model_fields.items()]
    return []


# --- usage errors -------------------------------------------------------------------------


class ConfigError(UsageError):
    """Raised when configuration is invalid; the message names the offending key."""


# --- runtime failures ----------------------------------------------------------------------


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


# --- the control API, the client and `baton run` ---------------------------------------


if TYPE_CHECKING:
    from baton.agents.errors import (
        CompactionIneffectiveError,
        InvalidArtifactError,
        JournalCorruptError,
        JournalRecordError,
        LeaseLostError,
        SandboxViolationError,
        SpendCapReachedFailure,
        UndeliveredFailure,
    )
    from baton.context.errors import (
        InvalidRequestError,
        SummaryFailure,
    )
    from baton.mailboxes.errors import (
        InvalidMessageError,
        MailboxBlockedError,
        MailboxClosedError,
        MailboxFullError,
    )
    from baton.memory.errors import (
        MemoryFileError,
        MemoryInputError,
        MissingExtraError,
        UnknownMemoryError,
    )
    from baton.models.errors import (
        ContextOverflowError,
        ModelCallFailure,
        RecordingDivergedError,
        RecordingFileError,
        RetiredModelError,
        ScriptExhaustedError,
        ScriptFileError,
    )
    from baton.pipeline.errors import (
        CommandLineError,
        DamagedScenarioError,
        InvalidPackageError,
        InvalidScenarioNameError,
        NoPendingHandoffError,
        NoScenarioFileError,
        NoScenarioModelError,
        NoSchedulerError,
        PackageVersionError,
        RecordingNeedsKeyError,
        RunArchiveConflictError,
        ScenarioExistsError,
        ScenarioInputsError,
        SchedulerReplyFailure,
        UnknownScenarioError,
    )
    from baton.runtime.errors import (
        ActorDeadError,
        ActorExistsError,
        AskTimeoutError,
        HandlerFailedError,
        RemoteFailure,
        UnhandledMessageError,
        UnknownActorError,
    )
    from baton.server.errors import (
        ControlRequestError,
        InvalidPayloadError,
        MailboxStillFullError,
        NoRuntimeError,
        ScenarioFailure,
        WorkspaceBusyError,
    )
    from baton.storage.errors import (
        ObjectNotFoundError,
        StorageError,
        StorageFailure,
        StoragePathError,
    )

# The layers' own errors, imported on first use (`baton.errors` re-exports every one).
__getattr__ = lazy_exports(
    __name__,
    {
        "ActorDeadError": "baton.runtime.errors",
        "ActorExistsError": "baton.runtime.errors",
        "AskTimeoutError": "baton.runtime.errors",
        "CommandLineError": "baton.pipeline.errors",
        "CompactionIneffectiveError": "baton.agents.errors",
        "ContextOverflowError": "baton.models.errors",
        "ControlRequestError": "baton.server.errors",
        "DamagedScenarioError": "baton.pipeline.errors",
        "HandlerFailedError": "baton.runtime.errors",
        "InvalidArtifactError": "baton.agents.errors",
        "InvalidMessageError": "baton.mailboxes.errors",
        "InvalidPackageError": "baton.pipeline.errors",
        "InvalidPayloadError": "baton.server.errors",
        "InvalidRequestError": "baton.context.errors",
        "InvalidScenarioNameError": "baton.pipeline.errors",
        "JournalCorruptError": "baton.agents.errors",
        "JournalRecordError": "baton.agents.errors",
        "LeaseLostError": "baton.agents.errors",
        "MailboxBlockedError": "baton.mailboxes.errors",
        "MailboxClosedError": "baton.mailboxes.errors",
        "MailboxFullError": "baton.mailboxes.errors",
        "MailboxStillFullError": "baton.server.errors",
        "MemoryFileError": "baton.memory.errors",
        "MemoryInputError": "baton.memory.errors",
        "MissingExtraError": "baton.memory.errors",
        "ModelCallFailure": "baton.models.errors",
        "NoPendingHandoffError": "baton.pipeline.errors",
        "NoRuntimeError": "baton.server.errors",
        "NoScenarioFileError": "baton.pipeline.errors",
        "NoScenarioModelError": "baton.pipeline.errors",
        "NoSchedulerError": "baton.pipeline.errors",
        "ObjectNotFoundError": "baton.storage.errors",
        "PackageVersionError": "baton.pipeline.errors",
        "RecordingDivergedError": "baton.models.errors",
        "RecordingFileError": "baton.models.errors",
        "RecordingNeedsKeyError": "baton.pipeline.errors",
        "RemoteFailure": "baton.runtime.errors",
        "RetiredModelError": "baton.models.errors",
        "RunArchiveConflictError": "baton.pipeline.errors",
        "SandboxViolationError": "baton.agents.errors",
        "ScenarioExistsError": "baton.pipeline.errors",
        "ScenarioFailure": "baton.server.errors",
        "ScenarioInputsError": "baton.pipeline.errors",
        "SchedulerReplyFailure": "baton.pipeline.errors",
        "ScriptExhaustedError": "baton.models.errors",
        "ScriptFileError": "baton.models.errors",
        "SpendCapReachedFailure": "baton.agents.errors",
        "StorageError": "baton.storage.errors",
        "StorageFailure": "baton.storage.errors",
        "StoragePathError": "baton.storage.errors",
        "SummaryFailure": "baton.context.errors",
        "UndeliveredFailure": "baton.agents.errors",
        "UnhandledMessageError": "baton.runtime.errors",
        "UnknownActorError": "baton.runtime.errors",
        "UnknownMemoryError": "baton.memory.errors",
        "UnknownScenarioError": "baton.pipeline.errors",
        "WorkspaceBusyError": "baton.server.errors",
    },
)

__all__ = [
    "SPACE_ERRNOS",
    "ActorDeadError",
    "ActorExistsError",
    "AskTimeoutError",
    "BatonError",
    "CommandLineError",
    "CompactionIneffectiveError",
    "ConfigError",
    "ContextOverflowError",
    "ControlRequestError",
    "DamagedScenarioError",
    "DiskFullFailure",
    "FileTooLargeFailure",
    "HandlerFailedError",
    "InvalidArtifactError",
    "InvalidMessageError",
    "InvalidPackageError",
    "InvalidPayloadError",
    "InvalidRequestError",
    "InvalidScenarioNameError",
    "JournalCorruptError",
    "JournalRecordError",
    "LeaseLostError",
    "MailboxBlockedError",
    "MailboxClosedError",
    "MailboxFullError",
    "MailboxStillFullError",
    "MemoryFileError",
    "MemoryInputError",
    "MissingExtraError",
    "ModelCallFailure",
    "NoPendingHandoffError",
    "NoRuntimeError",
    "NoScenarioFileError",
    "NoScenarioModelError",
    "NoSchedulerError",
    "ObjectNotFoundError",
    "PackageVersionError",
    "RecordingDivergedError",
    "RecordingFileError",
    "RecordingNeedsKeyError",
    "RemoteFailure",
    "RetiredModelError",
    "RunArchiveConflictError",
    "RuntimeFailure",
    "SandboxViolationError",
    "ScenarioExistsError",
    "ScenarioFailure",
    "ScenarioInputsError",
    "SchedulerReplyFailure",
    "ScriptExhaustedError",
    "ScriptFileError",
    "SpendCapReachedFailure",
    "StateFileError",
    "StorageError",
    "StorageFailure",
    "StoragePathError",
    "SummaryFailure",
    "UndeliveredFailure",
    "UnhandledMessageError",
    "UnknownActorError",
    "UnknownMemoryError",
    "UnknownScenarioError",
    "UsageError",
    "WorkspaceBusyError",
    "file_size_limit",
    "file_too_large",
    "out_of_space",
    "unretriable",
    "validation_problems",
    "write_failure",
]
