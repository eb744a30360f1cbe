"""`ActorRef`: the handle code holds to talk to an actor, wherever it runs."""

from __future__ import annotations

from typing import Any, Protocol

from baton.mailboxes.errors import MailboxBlockedError


class Router(Protocol):
    """What an `ActorRef` needs from the runtime that owns the actor."""

    async def tell(self, name: str, message: Any, *, sender: str | None = None) -> None: ...

    def tell_nowait(self, name: str, message: Any, *, sender: str | None = None) -> None: ...

    async def ask(
        self, name: str, message: Any, *, timeout: float | None = ..., sender: str | None = None
    ) -> Any: ...

    def is_alive(self, name: str) -> bool: ...


DEFAULT_ASK_TIMEOUT = 60.0


class ActorRef:
    """A cheap, copyable address of one actor; messages go through its runtime."""

    __slots__ = ("_router", "name")

    def __init__(self, name: str, router: Router) -> None:
        self.name = name
        self._router = router

    async def tell(self, message: Any, *, sender: str | None = None) -> None:
        """Send `message` without waiting for it to be handled (waits only if the box is full)."""
        try:
            # Skipping a coroutine layer when there is room is most of a tell's cost.
            self._router.tell_nowait(self.name, message, sender=sender)
        except MailboxBlockedError:
            await self._router.tell(self.name, message, sender=sender)

    async def ask(
        self,
        message: Any,
        *,
        timeout: float | None = DEFAULT_ASK_TIMEOUT,
        sender: str | None = None,
    ) -> Any:
        """Send `message` and wait for the handler's return value (or its error)."""
        return await self._router.ask(self.name, message, timeout=timeout, sender=sender)

    def peer(self, name: str) -> ActorRef:
        """A ref to another actor of the same runtime, so actors can address each other."""
        return ActorRef(name, self._router)

    @property
    def is_alive(self) -> bool:
        """Whether the actor is currently running."""
        return self._router.is_alive(self.name)

    def __repr__(self) -> str:
        return f"ActorRef({self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ActorRef) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)
