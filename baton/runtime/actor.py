"""The `Actor` base class and the `@handler` decorator that routes messages by type."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable, Hashable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, overload

from pydantic import BaseModel

from baton.runtime.logging import current_envelope

if TYPE_CHECKING:
    from baton.mailboxes.envelope import Envelope
    from baton.runtime.ref import ActorRef

BoundHandler = Callable[[Any], Awaitable[Any]]
_F = TypeVar("_F", bound=Callable[..., Awaitable[Any]])

_HANDLER_ATTR = "__baton_handler__"


@overload
def handler(fn: _F, /) -> _F: ...


@overload
def handler(message_type: type[BaseModel], /) -> Callable[[_F], _F]: ...


def handler(arg: Any, /) -> Any:
    """Mark an async method as the handler for one message type.

    The type comes from the annotation of the method's message parameter (`@handler`), or is
    given explicitly (`@handler(Hello)`) when the annotation cannot be resolved at class level.
    """
    if isinstance(arg, type):
        message_type = arg

        def mark(fn: _F) -> _F:
            setattr(fn, _HANDLER_ATTR, message_type)
            return fn

        return mark
    if not inspect.iscoroutinefunction(arg):
        raise TypeError(f"@handler needs an async method, got {arg!r}")
    setattr(arg, _HANDLER_ATTR, None)  # resolved from the annotation on first use
    return arg


def _annotated_type(fn: Callable[..., Any]) -> type:
    params = list(inspect.signature(fn).parameters.values())
    if len(params) != 2:
        raise TypeError(f"handler {fn.__qualname__} must take (self, message)")
    hints = typing.get_type_hints(fn)
    annotated = hints.get(params[1].name)
    if not isinstance(annotated, type):
        raise TypeError(
            f"handler {fn.__qualname__} needs a class annotation on its message parameter, "
            f"or use @handler(MessageType)"
        )
    return annotated


class Actor:
    """Base class for actors: subclass it and mark async methods with `@handler`.

    An actor handles one message at a time, in arrival order. A keyed actor (one that sets
    `actor_max_concurrent_keys` above 1) handles up to that many keys at once, each key's
    messages one at a time in arrival order; `actor_key` says which key a message belongs to
    (docs/architecture.md, "Keyed actors"). Framework attributes start with `actor_` so they
    never collide with a subclass's own names.
    """

    actor_ref: ActorRef
    # How many keys this actor's messages are handled for at once: read once, from the
    # instance, when the actor starts (an instance may set it from its configuration).
    actor_max_concurrent_keys: int = 1
    _actor_handlers: ClassVar[dict[type, str] | None] = None

    @property
    def actor_envelope(self) -> Envelope | None:
        """The envelope of the message this task is handling: its id is stable across
        redeliveries, which is what lets a handler recognise a message it already acted on
        before a crash. Per task, so the handlers of a keyed actor each see their own."""
        return current_envelope()

    def actor_key(self, message: object) -> Hashable | None:
        """The key `message` belongs to (None: the actor's default key). Messages of one key
        are handled one at a time, in arrival order. It must depend on the message alone:
        it is asked as the message is taken from the mailbox, before any handler runs."""
        return None

    @property
    def actor_name(self) -> str:
        """The name this actor was spawned under."""
        return self.actor_ref.name

    async def on_start(self) -> None:
        """Run before the first message; the actor counts as started once this returns."""

    async def on_stop(self) -> None:
        """Run once when the actor stops (gracefully, by shutdown, or before a restart)."""

    async def on_failure(self, error: Exception, envelope: Envelope) -> None:
        """Run when a handler raised, before the message is retried or dead-lettered."""

    @classmethod
    def actor_handlers(cls) -> dict[type, str]:
        """Map each handled message type to the name of its handler method."""
        table = cls.__dict__.get("_actor_handlers")
        if table is None:
            table = {}
            for klass in reversed(cls.__mro__):
                for attr, value in vars(klass).items():
                    if not callable(value) or not hasattr(value, _HANDLER_ATTR):
                        continue
                    explicit = getattr(value, _HANDLER_ATTR)
                    table[explicit or _annotated_type(value)] = attr
            cls._actor_handlers = table
        return table

    @classmethod
    def actor_message_types(cls) -> dict[str, type]:
        """Map each handled message type's name to the type (for messages arriving as JSON)."""
        return {t.__name__: t for t in cls.actor_handlers()}

    def actor_resolve(self, message: object) -> BoundHandler | None:
        """Return the bound handler for `message`, walking its type's MRO, or None."""
        table = self.actor_handlers()
        for klass in type(message).__mro__:
            name = table.get(klass)
            if name is not None:
                bound: BoundHandler = getattr(self, name)
                return bound
        return None
