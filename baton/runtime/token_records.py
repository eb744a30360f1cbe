"""The token log's record schema (docs/token-log.md, "Fields"): one pydantic model per event,
registered by the layer that emits it.

Every line carries `ts`, `event`, `actor`, `scenario`, `conversation` and `process`; each
event adds its own fields. The kernel registers its own events (a restart, a dead letter);
the layers above register theirs when their record module is imported
(`baton.agents.records`: model calls, compactions, handoffs; `baton.pipeline.records`:
memory recalls), so a new event never means editing the kernel. README and
docs/token-log.md document every field from these models.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class TokenLogRecord(BaseModel):
    """What every record shares; a layer's event subclasses it with `event` a `Literal`."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    ts: str = Field(description="when it happened, ISO 8601 UTC")
    actor: str | None = Field(None, description="the actor the event belongs to")
    scenario: str | None = Field(None, description="the scenario being worked on, if any")
    conversation: str | None = Field(None, description="the actor's conversation id, if any")
    process: str | None = Field(
        None,
        description="the process that wrote the line: HOST:PID, or with a Redis mailbox its "
        "consumer name HOST:PID:ID (as its banner prints it)",
    )

    omitted_when_none: ClassVar[frozenset[str]] = frozenset()
    """Fields a line leaves out rather than write as null: the ones only some lines of the
    event have, so the others keep their shape."""

    def line(self) -> dict[str, Any]:
        """The JSON object the log writes for this record."""
        dumped = self.model_dump(mode="json", by_alias=True)
        for name in self.omitted_when_none:
            if dumped.get(name) is None:
                dumped.pop(name, None)
        return dumped


_REGISTERED: dict[str, type[TokenLogRecord]] = {}


def register_records(*models: type[TokenLogRecord]) -> None:
    """Make each model's event a token-log record (registering one again is harmless); a
    second model for an event already taken is a `ValueError`."""
    for model in models:
        event = model.model_fields["event"].default
        if not isinstance(event, str):
            raise ValueError(f"{model.__name__} has no default `event`")
        known = _REGISTERED.get(event)
        if known is not None and known is not model:
            raise ValueError(f"event {event!r} is {known.__name__}'s already")
        if known is None:
            _REGISTERED[event] = model
            _adapter.cache_clear()


def record_model(event: object) -> type[TokenLogRecord] | None:
    """The model of a registered event, or None."""
    return _REGISTERED.get(event) if isinstance(event, str) else None


def events() -> tuple[str, ...]:
    """The registered events, in the order they were registered."""
    return tuple(_REGISTERED)


def registered_records() -> tuple[type[TokenLogRecord], ...]:
    """The registered models, in the order they were registered."""
    return tuple(_REGISTERED.values())


@cache
def _adapter() -> TypeAdapter[Any]:
    models = tuple(_REGISTERED.values())
    union: Any = models[0] if len(models) == 1 else Union[models]  # noqa: UP007 - built at run time
    return TypeAdapter(Annotated[union, Field(discriminator="event")])


def token_record_adapter() -> TypeAdapter[Any]:
    """One adapter over every registered record, told apart by `event` (the documents'
    schema: OpenAPI, README)."""
    return _adapter()


class ActorRestarted(TokenLogRecord):
    event: Literal["actor.restarted"] = "actor.restarted"
    restarts: int = Field(ge=1)
    backoff_ms: float = Field(ge=0)
    reason: str


class MessageDeadLettered(TokenLogRecord):
    event: Literal["message.dead_lettered"] = "message.dead_lettered"
    message_id: str
    message_type: str
    attempt: int = Field(ge=1)
    reason: str


register_records(ActorRestarted, MessageDeadLettered)
