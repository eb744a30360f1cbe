"""The Messages API stand-in's shared state: settings, queues, faults and request records.

`StandInState` is everything the handlers of `baton.testing._standin_app` and the public
`MessagesAPIStandIn` share (see `baton.testing` for the behaviour).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from baton.context.prompt_cache import PrefixCache
from baton.models.protocol import Model
from baton.models.scripted import ScriptedResponse
from baton.testing._standin_models import StandInModel
from baton.testing._standin_thinking import DroppedBlock, Signer

Endpoint = Literal["messages", "count_tokens", "models"]
StandInPolicy = Callable[[Mapping[str, Any]], ScriptedResponse | str]
"""Decides the reply to a valid `/v1/messages` request body when no scripted reply is queued."""

FAST_RETRY_AFTER = 0.001
"""The `retry-after` injected faults send by default. The SDK ignores a value of 0 (and then
backs off 0.5-8 s), but honours any positive one, so a millisecond keeps retry tests fast."""


@dataclass(frozen=True)
class Fault:
    """One injected failure, used by the next request to its endpoint.

    `delay` waits first (then the request goes on unless another field says otherwise);
    `status` answers with that HTTP status and the API's error body, with `retry-after` /
    `retry-after-ms` headers when `retry_after` is set; `mid_stream` lets a streaming request
    start and then breaks it off with an `error` event of `error_type` (a non-streaming request
    gets the HTTP 529 the API would send instead).
    """

    endpoint: Endpoint = "messages"
    status: int | None = None
    error_type: str | None = None
    message: str | None = None
    retry_after: float | None = FAST_RETRY_AFTER
    delay: float = 0.0
    mid_stream: bool = False

    def describe(self) -> str:
        """A short label for the request record."""
        if self.mid_stream:
            return f"mid_stream:{self.error_type or 'overloaded_error'}"
        if self.status is not None:
            return f"status:{self.status}"
        return f"delay:{self.delay:g}s"


@dataclass(frozen=True)
class RecordedRequest:
    """One request the stand-in received, secrets redacted, and how it answered."""

    method: str
    path: str
    endpoint: Endpoint | None
    headers: dict[str, str]
    body: Any
    status: int
    stream: bool = False
    authorized: bool = False
    fault: str | None = None
    problems: tuple[str, ...] = ()
    dropped_blocks: tuple[DroppedBlock, ...] = ()


def default_standin_policy(body: Mapping[str, Any]) -> ScriptedResponse:
    """Answer with one text block quoting the start of the last user text."""
    last = ""
    for message in reversed(body.get("messages") or []):
        content = message.get("content")
        if message.get("role") != "user":
            continue
        if isinstance(content, str):
            last = content
        elif isinstance(content, list):
            last = " ".join(b.get("text", "") for b in content if b.get("type") == "text")
        break
    quoted = " ".join(last.split())[:80] or "your request"
    return ScriptedResponse.model_validate(f"Stand-in reply to: {quoted}")


@dataclass
class StandInState:
    """The stand-in's settings, queues, counters and records, shared with its handlers."""

    api_key: str | None
    models: dict[str, StandInModel]
    context_window: int | None
    policy: StandInPolicy
    cache: PrefixCache
    chunk_chars: int
    model: Model | None = None
    requests: list[RecordedRequest] = field(default_factory=list)
    replies: deque[ScriptedResponse] = field(default_factory=deque)
    faults: deque[Fault] = field(default_factory=deque)
    in_flight: int = 0
    max_in_flight: int = 0
    next_id: int = 0
    stop: anyio.Event = field(default_factory=anyio.Event)
    gate: anyio.Event | None = None
    changed: anyio.Event = field(default_factory=anyio.Event)
    signer: Signer = field(default_factory=Signer)
    redacted_thinking_every: int = 0
    thinking_replies: int = 0
    # The normalised content of each issued reply that thought, by its tool_use ids.
    issued: dict[str, list[Any]] = field(default_factory=dict)

    def notify(self) -> None:
        """Wake everyone waiting for `in_flight` to change."""
        changed, self.changed = self.changed, anyio.Event()
        changed.set()
