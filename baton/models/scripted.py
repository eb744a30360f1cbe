"""`ScriptedModel`: the offline model for tests and for running without an API key.

It plays a script of replies per actor (text and `tool_use` blocks), or asks a policy
callable, and reports usage the way the API would: input tokens from the project's estimator,
split by a prompt-cache simulation into plain, cache-write and cache-read tokens. A payload
that declares `context_management` edits is read as the server would read it, through
`baton.context.server_edits` as the Messages API stand-in does (docs/context.md, "Server-side
context management"): cleared, cut at its latest compaction block, and compacted past the
trigger (a compaction pause is the block alone and takes no script turn). Every reply and log
line names the model `offline-scripted`, so nobody mistakes it for Claude.

A script is resumable: the reply to a `purpose="turn"` call is the script entry at the bound
`CallContext.turn`, so an agent that restarts from its journal at turn 7 gets entry 7, not
entry 0. Compaction and task-summary calls get the next scripted summary for that actor, or
a deterministic one built from the payload (see `baton.models._offline_summaries`).

Script files are JSON or TOML::

    [[actors.execute]]                 # one table per turn, in order
    text = "Reading the design first."
    tool_use = { name = "Read", input = { path = "scenarios/a/design.md" } }

    [[actors.execute]]
    text = "Done."

    [actors.init]                      # or the long form, with scripted summaries
    turns = [{ text = "ok" }]
    compactions = [{ analysis_conclusions = ["..."] }]
"""

from __future__ import annotations

import inspect
import json
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Self, TypeAlias, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from baton._log import get_logger
from baton.context.errors import InvalidRequestError
from baton.context.payload import Payload
from baton.context.prompt_cache import DEFAULT_MIN_CACHE_TOKENS, PrefixCache
from baton.context.server_edits import edit_problems, play_turn, server_view
from baton.context.tokens import estimate_block_tokens
from baton.context.usage import Usage
from baton.context.validation import validate_request
from baton.models._offline_summaries import compaction_summary, task_summary
from baton.models._script_file import invalid_script, parse_script_data, read_script_data
from baton.models.errors import ContextOverflowError, ScriptExhaustedError, ScriptFileError
from baton.models.protocol import CallContext, ModelLimits, ModelResponse, current_call
from baton.models.rules import rules_for, thinks

OFFLINE_MODEL_NAME = "offline-scripted"
ANY_ACTOR = "*"
"""Script key whose entries answer every actor the script does not name."""

log = get_logger(__name__, model=OFFLINE_MODEL_NAME)

_ID_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


class ScriptedText(BaseModel):
    """A text block of a scripted reply."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["text"] = "text"
    text: str = Field(min_length=1)


class ScriptedToolUse(BaseModel):
    """A tool call of a scripted reply; the id is generated when not given."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["tool_use"] = "tool_use"
    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,128}$")
    input: dict[str, Any] = Field(default_factory=dict)
    id: str | None = Field(None, pattern=r"^[a-zA-Z0-9_-]+$")


ScriptedBlock: TypeAlias = Annotated[ScriptedText | ScriptedToolUse, Field(discriminator="type")]


class ScriptedResponse(BaseModel):
    """One scripted reply. Shorthands: a bare string, or `text` and/or `tool_use` keys."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    content: list[ScriptedBlock] = Field(min_length=1)
    stop_reason: str | None = Field(
        None, description="default: tool_use when the reply calls a tool, else end_turn"
    )

    @model_validator(mode="before")
    @classmethod
    def _expand_shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"content": [{"type": "text", "text": data}]}
        if not isinstance(data, Mapping) or "content" in data:
            return data
        rest = dict(data)
        content: list[Any] = []
        if "text" in rest:
            content.append({"type": "text", "text": rest.pop("text")})
        calls = rest.pop("tool_use", None)
        for call in calls if isinstance(calls, list) else [calls] if calls else []:
            content.append({"type": "tool_use", **call} if isinstance(call, Mapping) else call)
        return {**rest, "content": content}

    def to_content(self, id_prefix: str) -> list[dict[str, Any]]:
        """The reply as payload-shaped blocks; tool ids default to `{id_prefix}_{index}`."""
        blocks: list[dict[str, Any]] = []
        for index, block in enumerate(self.content):
            if isinstance(block, ScriptedText):
                blocks.append({"type": "text", "text": block.text})
            else:
                tool_id = block.id or f"{_ID_UNSAFE.sub('_', id_prefix)}_{index}"
                blocks.append(
                    {"type": "tool_use", "id": tool_id, "name": block.name, "input": block.input}
                )
        return blocks

    @property
    def effective_stop_reason(self) -> str:
        """The stop reason given, or the one the API would report for this content."""
        if self.stop_reason:
            return self.stop_reason
        calls_tool = any(isinstance(b, ScriptedToolUse) for b in self.content)
        return "tool_use" if calls_tool else "end_turn"


class ActorScript(BaseModel):
    """What one actor is told: replies by turn, then scripted summaries in order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    turns: list[ScriptedResponse] = Field(default_factory=list)
    compactions: list[dict[str, Any] | str] = Field(
        default_factory=list, description="summary JSON objects (or raw text), used in order"
    )
    task_summaries: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _list_means_turns(cls, data: Any) -> Any:
        return {"turns": data} if isinstance(data, list) else data


class Script(BaseModel):
    """A whole script: per actor name (or `*` for any other actor), its `ActorScript`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: str | None = Field(None, description="a label naming the file's format version")
    actors: dict[str, ActorScript] = Field(default_factory=dict)

    @classmethod
    def from_file(cls, path: str | Path, *, shown: str | None = None) -> Script:
        """Load a `.json` or `.toml` script; `ScriptFileError` (a `ConfigError`) names the
        file (as `shown`, by default its path) and where in it the problem lies.

        This reads synchronously: call it while setting up, not from a running handler.
        """
        file = Path(path)
        name = shown or str(file)
        return cls._validated(read_script_data(file, name), name)

    @classmethod
    def from_bytes(cls, data: bytes, *, shown: str, toml: bool | None = None) -> Script:
        """A script from its bytes, such as an object of the store, with the checks
        `from_file` makes (size, nesting, UTF-8, every block's shape); `ScriptFileError` names
        it as `shown` (the object's key). TOML when `toml`, by default when `shown` ends in
        `.toml`; JSON otherwise."""
        is_toml = shown.endswith(".toml") if toml is None else toml
        return cls._validated(parse_script_data(data, shown, toml=is_toml), shown)

    @classmethod
    def _validated(cls, data: Any, shown: str) -> Script:
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ScriptFileError(shown, invalid_script(exc)) from None

    def for_actor(self, actor: str) -> ActorScript | None:
        """The actor's script, else the `*` entry, else None."""
        return self.actors.get(actor) or self.actors.get(ANY_ACTOR)


PolicyResult: TypeAlias = ScriptedResponse | str
Policy: TypeAlias = Callable[[Payload, CallContext], PolicyResult | Awaitable[PolicyResult]]
"""Decides a reply from the payload and the call context; may be sync or async."""


def default_policy(payload: Payload, context: CallContext) -> ScriptedResponse:
    """The embedded offline default: acknowledge and end the turn, never call a tool."""
    del payload  # the reply does not depend on it; it only has to end the round cleanly
    return ScriptedResponse.model_validate(
        f"[{OFFLINE_MODEL_NAME}] No API key is set, so no model ran for {context.actor!r} "
        f"(turn {context.turn}). Set ANTHROPIC_API_KEY to use Claude."
    )


@dataclass(frozen=True)
class ScriptedCall:
    """One call the scripted model answered: for whom, what it was sent, what it replied."""

    context: CallContext
    payload: Payload
    response: ModelResponse


def _body_of(payload: Payload) -> dict[str, Any]:
    """The request body of `payload`: its `betas` go in a header, never in the body."""
    return {k: v for k, v in payload.items() if k != "betas"}


class ScriptedModel:
    """The offline `Model`: scripted or policy-driven replies with realistic usage figures.

    `calls` keeps every call (the last `keep_calls` when given); `cache` is the prompt-cache
    simulation, shared by all actors as the real cache is shared by an organisation.
    """

    name = OFFLINE_MODEL_NAME
    answers_at_once = True  # as OfflineModel: no latency to work through

    def __init__(
        self,
        script: Script | Mapping[str, Any] | None = None,
        *,
        policy: Policy | None = None,
        context_window: int = 1_000_000,
        max_output_tokens: int = 64_000,
        min_cache_tokens: int = DEFAULT_MIN_CACHE_TOKENS,
        validate: bool = True,
        keep_calls: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if script is not None and not isinstance(script, Script):
            script = Script.model_validate(script)
        self.script = script
        self._policy = policy
        self._limits = ModelLimits(
            model=OFFLINE_MODEL_NAME,
            context_window=context_window,
            max_output_tokens=max_output_tokens,
            source="config",
        )
        self._validate = validate
        self._clock = clock
        self.cache = PrefixCache(min_tokens=min_cache_tokens, clock=clock)
        # A long offline run should pass `keep_calls` so the record stays bounded.
        self.calls: deque[ScriptedCall] = deque(maxlen=keep_calls)
        self._counters: dict[tuple[str, str], int] = {}

    @classmethod
    def from_file(cls, path: str | Path, **options: Any) -> Self:
        """A scripted model playing the script in `path` (`.json` or `.toml`)."""
        return cls(Script.from_file(path), **options)

    def __repr__(self) -> str:
        actors = sorted(self.script.actors) if self.script else []
        return f"ScriptedModel(actors={actors}, calls={len(self.calls)})"

    def calls_for(self, actor: str) -> list[ScriptedCall]:
        """The calls made on behalf of `actor`, in order."""
        return [c for c in self.calls if c.context.actor == actor]

    async def limits(self) -> ModelLimits:
        """The configured window and output cap (there is no Models API offline)."""
        return self._limits

    async def count_tokens(self, payload: Payload) -> int:
        """The estimator's count of what the server reads: what `create` would report as
        total input tokens."""
        return server_view(_body_of(payload)).input_tokens

    async def create(self, payload: Payload) -> ModelResponse:
        """Reply to `payload` for the bound call context, as the real API would shape it."""
        started = self._clock()
        body = _body_of(payload)
        if self._validate:
            problems = validate_request(body, require_model=False)
            rules = rules_for(str(body.get("model") or ""))
            problems += edit_problems(body, payload.get("betas") or [], thinks=thinks(body, rules))
            if problems:
                raise InvalidRequestError(problems)
        view = server_view(body)
        if view.input_tokens > self._limits.context_window:
            raise ContextOverflowError(view.input_tokens, self._limits.context_window)
        context = self._context()
        turn = play_turn(body, view, cache=self.cache, namespace=OFFLINE_MODEL_NAME)
        if turn.pause and turn.compaction is not None:
            # The server answers alone: the script's turn is still to come.
            content: list[Any] = [turn.compaction]
            stop_reason, usage = "compaction", turn.usage(None)
        else:
            reply = await self._reply(cast(Payload, turn.body), context)
            content = reply.to_content(f"toolu_{context.actor}_{context.turn:04d}")
            cached = self.cache.usage_for(turn.body, namespace=OFFLINE_MODEL_NAME)
            usage = turn.usage(
                Usage(
                    input_tokens=cached.input_tokens,
                    cache_creation_input_tokens=cached.cache_creation_input_tokens,
                    cache_read_input_tokens=cached.cache_read_input_tokens,
                    output_tokens=max(1, sum(estimate_block_tokens(b) for b in content)),
                    cache_creation_1h_input_tokens=cached.cache_creation_1h_input_tokens,
                )
            )
            stop_reason = reply.effective_stop_reason
            if turn.compaction is not None:
                content = [turn.compaction, *content]
        response = ModelResponse(
            content=content,
            stop_reason=stop_reason,
            usage=usage,
            model=OFFLINE_MODEL_NAME,
            latency_ms=max(0.0, (self._clock() - started) * 1000),
            context_management=turn.context_management,
        )
        sent: Payload = {**payload, "messages": list(payload["messages"])}  # as it was sent
        self.calls.append(ScriptedCall(context=context, payload=sent, response=response))
        log.debug(
            "model.scripted_reply",
            **context.log_fields(),
            stop_reason=response.stop_reason,
            **usage.model_dump(),
        )
        return response

    def _context(self) -> CallContext:
        bound = current_call()
        if bound is not None:
            return bound
        # Without a bound context (a bare call in a test) turns count per process.
        turn = self._next(ANY_ACTOR, "turn")
        return CallContext(actor=ANY_ACTOR, turn=turn)

    def _next(self, actor: str, purpose: str) -> int:
        key = (actor, purpose)
        value = self._counters.get(key, 0)
        self._counters[key] = value + 1
        return value

    async def _reply(self, payload: Payload, context: CallContext) -> ScriptedResponse:
        script = self.script.for_actor(context.actor) if self.script else None
        if context.purpose == "compaction":
            return self._summary(script.compactions if script else [], context, payload)
        if context.purpose == "task_summary":
            return self._summary(script.task_summaries if script else [], context, payload)
        if script is not None and context.turn < len(script.turns):
            return script.turns[context.turn]
        if self._policy is None and script is not None:
            raise ScriptExhaustedError(context.actor, context.turn, len(script.turns))
        result = (self._policy or default_policy)(payload, context)
        if inspect.isawaitable(result):
            result = await result
        return ScriptedResponse.model_validate(result)

    def _summary(
        self, scripted: Sequence[dict[str, Any] | str], context: CallContext, payload: Payload
    ) -> ScriptedResponse:
        index = self._next(context.actor, context.purpose)
        if index < len(scripted):
            entry = scripted[index]
            text = entry if isinstance(entry, str) else json.dumps(entry, ensure_ascii=False)
        elif context.purpose == "compaction":
            text = compaction_summary(payload, context.actor)
        else:
            text = task_summary(payload)
        return ScriptedResponse.model_validate(text)
