"""The control API's request and response bodies, shared by the server and the `Client`;
`GET /status`'s is in `_status_models`, `/dead-letters`' and `/memory`'s beside their routes.
Nothing here imports past pydantic: `baton tell` and `baton ask` load this module and the
client alone (docs/architecture.md, "What a command imports")."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from baton.runtime.ref import DEFAULT_ASK_TIMEOUT

MAX_TIMEOUT = 3600.0
# An ask goes through the actor's mailbox, which a durable one writes to disk first: a
# shorter wait could only ever time out.
MIN_TIMEOUT = 0.05
DEFAULT_TELL_TIMEOUT = 10.0


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MessageRequest(_Body):
    """A message for `tell` or `ask`, named by its type and given as JSON fields."""

    # JSON's own types, as the OpenAPI document states them (no `"1"` for a number).
    model_config = ConfigDict(extra="forbid", strict=True)

    type: str = Field(
        min_length=1, max_length=200, description="the message class name, e.g. `Prompt`"
    )
    payload: dict[str, Any] = Field(
        default_factory=dict, description="the message's fields, validated against its class"
    )
    timeout: float | None = Field(
        None,
        ge=MIN_TIMEOUT,
        le=MAX_TIMEOUT,
        allow_inf_nan=False,
        description=(
            f"seconds: for ask, how long to wait for the reply (default {DEFAULT_ASK_TIMEOUT:g}); "
            f"for tell, how long to wait for room in a full mailbox "
            f"(default {DEFAULT_TELL_TIMEOUT:g})"
        ),
    )

    @field_validator("payload")
    @classmethod
    def _valid_unicode(cls, payload: dict[str, Any]) -> dict[str, Any]:
        # JSON lets a client escape a lone surrogate ("\ud800"); no reply or log line could
        # carry it back out as UTF-8, so it is refused at the door.
        if _has_lone_surrogate(payload):
            raise ValueError("strings must be valid Unicode (found a lone surrogate escape)")
        return payload


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(item) for item in value)
    return False


def utf8_safe(value: Any) -> Any:
    """`value` with every string made encodable as UTF-8 (lone surrogates replaced)."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(value, dict):
        return {utf8_safe(k): utf8_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [utf8_safe(item) for item in value]
    return value


class Told(_Body):
    actor: str
    type: str
    queued: Literal[True] = True


class AskReply(_Body):
    actor: str
    type: str | None = Field(description="the reply's class name when it is a pydantic model")
    reply: Any = Field(description="the handler's return value as JSON")


class Health(_Body):
    status: Literal["ok"] = "ok"
    pid: int
    workspace: str | None
    version: str


class StopAccepted(_Body):
    stopping: Literal[True] = True
