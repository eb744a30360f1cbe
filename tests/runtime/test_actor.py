"""Handler registration and dispatch by message type."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from baton import Actor, handler


class Base(BaseModel):
    pass


class Derived(Base):
    pass


class Other(BaseModel):
    pass


class Parent(Actor):
    @handler
    async def on_base(self, msg: Base) -> str:
        return "base"

    @handler(Other)
    async def on_other(self, msg: object) -> str:
        return "other"


class Child(Parent):
    @handler
    async def on_derived(self, msg: Derived) -> str:
        return "derived"


def test_handlers_are_registered_from_annotations_and_explicit_types() -> None:
    """`@handler` reads the annotation; `@handler(T)` uses T."""
    assert {Base: "on_base", Other: "on_other"} == Parent.actor_handlers()
    assert {"Base": Base, "Other": Other} == Parent.actor_message_types()


async def test_dispatch_prefers_the_most_specific_type() -> None:
    """A subclass message goes to its own handler when there is one, else its base's."""
    child, parent = Child(), Parent()
    resolved = child.actor_resolve(Derived())
    assert resolved is not None
    assert "derived" == await resolved(Derived())
    resolved = parent.actor_resolve(Derived())
    assert resolved is not None
    assert "base" == await resolved(Derived())


def test_subclass_tables_do_not_leak_into_the_parent() -> None:
    """A subclass's extra handler is not visible on its parent class."""
    Child.actor_handlers()
    assert Derived not in Parent.actor_handlers()
    assert Derived in Child.actor_handlers()


def test_unhandled_type_resolves_to_none() -> None:
    """A message no handler accepts resolves to None (the runtime dead-letters it)."""

    class Stray(BaseModel):
        pass

    assert Parent().actor_resolve(Stray()) is None


def test_handler_must_be_async() -> None:
    """Decorating a plain function is refused at class definition."""
    with pytest.raises(TypeError, match="async"):

        class Bad(Actor):
            @handler
            def sync(self, msg: Base) -> None:  # type: ignore[type-var]
                return None
