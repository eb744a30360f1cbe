"""Recordings: every model reply of a scenario's run, kept so the run can be replayed offline.

`baton run --record` appends each reply to `scenarios/<name>/recording.jsonl` as it arrives
(`RecordingModel`); without an API key the offline model answers a scenario that has one
from it (`ReplayModel`), by the call's key: actor, conversation, turn and purpose
(docs/recordings.md, "Format" and "Replay").

One JSON object a line, appended whole and fsynced, so a killed run keeps every reply it got;
a torn last line is ignored on reading and cut off before the next append. A key recorded
twice (a resumed run made the call again, or a later recording) keeps its latest reply. A
server-side compaction pause (`stop_reason: "compaction"`, the block alone) is kept beside
the reply of its key: it is replayed first, until the request carries its block back
(docs/context.md, "Server-side context management").
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal, NamedTuple

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from baton._log import get_logger
from baton._regular_files import read_regular
from baton._write_rules import SCENARIOS_DIR
from baton.context.payload import Payload
from baton.context.tokens import estimate_payload_tokens
from baton.errors import validation_problems
from baton.models._nesting import MAX_DEPTH, json_too_deep
from baton.models.errors import RecordingDivergedError, RecordingFileError
from baton.models.protocol import (
    CallContext,
    Model,
    ModelLimits,
    ModelResponse,
    Purpose,
    TokenCounter,
    current_call,
)
from baton.runtime.disk_writes import append_whole

log = get_logger(__name__)

RECORDING_FILE = "recording.jsonl"
RECORDING_FORMAT: Final = "baton.recording/1"
MAX_RECORDING_BYTES = 256 * 1024 * 1024
"""A recording larger than this is refused before it is read: replaying holds it whole (a
long run's recording is a few MB)."""
REPLAY_MODEL_NAME = "offline-replay"
"""The model a replayed reply names: a replay calls no API (the recorded model is kept in
each line's `response.model`)."""

_RUN_SEPARATOR = "@"  # as in `baton.pipeline.messages.scenario_conversation`


class RecordingKey(NamedTuple):
    """Which call a reply answers; `conversation` leaves out a resubmission's `@<run>`."""

    actor: str
    conversation: str
    turn: int
    purpose: Purpose


def recording_key(call: CallContext) -> RecordingKey | None:
    """The key of a call of a scenario's conversation; None for any other call."""
    if call.scenario is None or call.conversation is None:
        return None
    conversation, _, _ = call.conversation.partition(_RUN_SEPARATOR)
    return RecordingKey(call.actor, conversation, call.turn, call.purpose)


def recording_path(workspace: Path, scenario: str) -> Path:
    """Where a scenario's recording lives: `scenarios/<name>/recording.jsonl`."""
    return workspace / SCENARIOS_DIR / scenario / RECORDING_FILE


def _run_of(conversation: str) -> int:
    _, sep, run = conversation.partition(_RUN_SEPARATOR)
    return int(run) if sep and run.isdigit() else 1


class RecordedReply(BaseModel):
    """One line of a recording: the call's key, where it came from, and the reply itself."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["baton.recording/1"] = RECORDING_FORMAT
    actor: str = Field(min_length=1)
    conversation: str = Field(min_length=1, description="without the `@<run>` suffix")
    turn: int = Field(ge=0)
    purpose: Purpose
    scenario: str = Field(min_length=1)
    run: int = Field(1, ge=1, description="which submission of the scenario was recorded")
    recorded_at: datetime
    response: ModelResponse

    @property
    def key(self) -> RecordingKey:
        return RecordingKey(self.actor, self.conversation, self.turn, self.purpose)

    @classmethod
    def of(cls, call: CallContext, response: ModelResponse) -> RecordedReply | None:
        """The line recording `response` to `call`; None when the call is of no scenario."""
        key = recording_key(call)
        if key is None or call.scenario is None or call.conversation is None:
            return None
        return cls(
            actor=key.actor,
            conversation=key.conversation,
            turn=key.turn,
            purpose=key.purpose,
            scenario=call.scenario,
            run=_run_of(call.conversation),
            recorded_at=datetime.now(UTC),
            response=response,
        )


def encode_reply(reply: RecordedReply) -> bytes:
    """One recording line: compact JSON and a newline."""
    body = json.dumps(reply.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))
    return body.encode() + b"\n"


def append_reply(path: Path, reply: RecordedReply) -> None:
    """Append one line whole and on disk; a torn last line a kill left is cut off first.
    Blocks: call it from a worker thread."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size:
            tail = os.pread(fd, min(size, 1 << 16), max(0, size - (1 << 16)))
            if not tail.endswith(b"\n"):
                # The unfinished line of a killed run: the reply it held was never used.
                keep = size - len(tail) + tail.rfind(b"\n") + 1 if b"\n" in tail else 0
                os.ftruncate(fd, keep)
        append_whole(fd, encode_reply(reply), path, sync=True)
    finally:
        os.close(fd)


def _read_recording(path: Path, shown: str) -> bytes:
    if os.path.isdir(path):
        raise RecordingFileError(shown, None, "is a directory, not a recording")
    try:
        # The link resolved first: read_regular opens without following one, and refuses a
        # FIFO or a device without waiting on it (docs/recordings.md, "Format").
        return read_regular(Path(os.path.realpath(path)), shown, MAX_RECORDING_BYTES)
    except ValueError as exc:
        raise RecordingFileError(shown, None, str(exc).removeprefix(f"{shown} ")) from None
    except OSError as exc:
        problem = f"cannot be read ({exc.strerror or exc})"
        raise RecordingFileError(shown, None, problem) from None


def _parse_line(line: bytes, shown: str, number: int) -> RecordedReply:
    """One recording line as a reply, every block of it checked, before anything replays it:
    a line nested too deep for the parser, or of the wrong shape, is the file's error, not a
    crash the agent would restart on."""
    if json_too_deep(line) is not None:
        problem = f"arrays and objects nest more than {MAX_DEPTH} levels deep"
        raise RecordingFileError(shown, number, problem)
    try:
        return RecordedReply.model_validate(json.loads(line))
    except ValidationError as exc:
        problem = "; ".join(validation_problems(exc, show_input=False)[:3])
    except ValueError:
        problem = "not JSON"
    except TypeError as exc:
        # ModelResponse's block check raises TypeError, which pydantic passes on unwrapped.
        problem = f"response.{exc}"
    raise RecordingFileError(shown, number, problem)


def _compaction_problem(response: ModelResponse) -> str | None:
    """What is wrong with where a reply holds a compaction block (None: nothing): the server
    puts one first, and a pause is that block alone."""
    kinds = [block["type"] for block in response.content]
    if "compaction" in kinds[1:]:
        return "response.content: a compaction block must come first"
    if response.stop_reason == "compaction" and kinds != ["compaction"]:
        return (
            'response.content: a reply with stop_reason "compaction" is its compaction block alone'
        )
    return None


def _is_pause(response: ModelResponse) -> bool:
    return response.stop_reason == "compaction"


def _carries(payload: Payload, pause: ModelResponse) -> bool:
    """Whether `payload` sends back the compaction block of `pause` (its latest one does)."""
    block = {k: v for k, v in (pause.compaction or {}).items() if k != "cache_control"}
    for message in reversed(payload["messages"]):
        content = message["content"]
        for sent in reversed(content) if isinstance(content, list) else ():
            if sent["type"] == "compaction":
                return block == {k: v for k, v in sent.items() if k != "cache_control"}
    return False


class Recording:
    """A scenario's recorded replies by key (the latest line of a key wins)."""

    def __init__(
        self,
        path: Path,
        replies: Mapping[RecordingKey, RecordedReply],
        pauses: Mapping[RecordingKey, RecordedReply] | None = None,
    ) -> None:
        self.path = path
        self.replies = dict(replies)
        self.pauses = dict(pauses or {})
        """The compaction pauses by key, each before the reply of its key."""

    @classmethod
    def load(cls, path: Path, shown: str | None = None) -> Recording:
        """Read a recording; `RecordingFileError` naming it (as `shown`, by default its path)
        for a file that is not one to read and for a damaged line that is not the last.
        Blocks: call it while setting up or from a worker thread."""
        name = shown or str(path)
        return cls._parsed(_read_recording(path, name), path, name)

    @classmethod
    def from_bytes(cls, data: bytes, shown: str) -> Recording:
        """A recording from its bytes, such as an object of the store, with the checks
        `load` makes (size, every line's nesting and shape, a torn last line ignored);
        `RecordingFileError` names it as `shown` (the object's key)."""
        if len(data) > MAX_RECORDING_BYTES:
            problem = f"is {len(data)} bytes, over the {MAX_RECORDING_BYTES} byte limit"
            raise RecordingFileError(shown, None, problem)
        return cls._parsed(data, Path(shown), shown)

    @classmethod
    def _parsed(cls, data: bytes, path: Path, name: str) -> Recording:
        lines = data.split(b"\n")
        replies: dict[RecordingKey, RecordedReply] = {}
        pauses: dict[RecordingKey, RecordedReply] = {}
        torn = lines.pop()  # what follows the last newline: empty, or a torn write
        if torn.strip():
            log.warning("recording.torn_line_ignored", path=str(path), line=len(lines) + 1)
        for number, line in enumerate(lines, start=1):
            if line.strip():
                reply = _parse_line(line, name, number)
                problem = _compaction_problem(reply.response)
                if problem is not None:
                    raise RecordingFileError(name, number, problem)
                (pauses if _is_pause(reply.response) else replies)[reply.key] = reply
        return cls(path, replies, pauses)

    def reply(self, key: RecordingKey, payload: Payload | None = None) -> RecordedReply | None:
        """The recorded reply to the call `key` names, if any: its compaction pause when one
        was recorded and `payload` does not carry that block back yet."""
        pause = self.pauses.get(key)
        if pause is not None and (payload is None or not _carries(payload, pause.response)):
            return pause
        return self.replies.get(key)


class RecordingModel:
    """A model client that appends every reply to a scenario call to that scenario's
    recording before handing it back (`baton run --record`)."""

    def __init__(self, inner: Model, workspace: Path) -> None:
        self._inner = inner
        self._workspace = workspace

    @property
    def name(self) -> str:
        return self._inner.name

    def __getattr__(self, attribute: str) -> Any:
        # What the start checks look up beside the protocol (`current_models`, ...).
        return getattr(self._inner, attribute)

    async def create(self, payload: Payload) -> ModelResponse:
        response = await self._inner.create(payload)
        call = current_call()
        line = RecordedReply.of(call, response) if call is not None else None
        if line is not None:
            path = recording_path(self._workspace, line.scenario)
            # Before the agent journals the step: a reply the agent used is on record.
            await anyio.to_thread.run_sync(append_reply, path, line)
            log.debug("recording.appended", path=str(path), **line.key._asdict())
        return response

    async def limits(self) -> ModelLimits:
        return await self._inner.limits()

    async def count_tokens(self, payload: Payload) -> int:
        if isinstance(self._inner, TokenCounter):
            return await self._inner.count_tokens(payload)
        return estimate_payload_tokens(payload)


class ReplayedCall(NamedTuple):
    """One call a replay answered."""

    context: CallContext
    payload: Payload
    response: ModelResponse


class ReplayModel:
    """The offline model of a scenario that has a recording: each call gets the recorded
    reply of its key, or stops with `RecordingDivergedError` naming the call."""

    name = REPLAY_MODEL_NAME

    def __init__(
        self,
        recording: Recording,
        *,
        context_window: int = 1_000_000,
        max_output_tokens: int = 64_000,
        keep_calls: int | None = None,
        shown_as: str | None = None,
    ) -> None:
        self.recording = recording
        # How a divergence names the file: workspace-relative in `baton run`'s messages.
        self._shown = shown_as or str(recording.path)
        self._limits = ModelLimits(
            model=REPLAY_MODEL_NAME,
            context_window=context_window,
            max_output_tokens=max_output_tokens,
            source="config",
        )
        self.calls: deque[ReplayedCall] = deque(maxlen=keep_calls)

    async def create(self, payload: Payload) -> ModelResponse:
        started = time.monotonic()
        call = current_call()
        key = recording_key(call) if call is not None else None
        found = self.recording.reply(key, payload) if key is not None else None
        if found is None:
            actor = call.actor if call is not None else "?"
            turn = call.turn if call is not None else 0
            purpose = call.purpose if call is not None else "turn"
            conversation = (call.conversation if call is not None else None) or "main"
            raise RecordingDivergedError(self._shown, actor, conversation, turn, purpose)
        assert call is not None
        response = found.response.model_copy(
            update={
                "model": REPLAY_MODEL_NAME,
                "latency_ms": max(0.0, (time.monotonic() - started) * 1000),
            }
        )
        sent: Payload = {**payload, "messages": list(payload["messages"])}
        self.calls.append(ReplayedCall(call, sent, response))
        return response

    async def limits(self) -> ModelLimits:
        return self._limits

    async def count_tokens(self, payload: Payload) -> int:
        return estimate_payload_tokens(payload)
