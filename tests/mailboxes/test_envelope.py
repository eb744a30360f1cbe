"""Envelope: immutable and slotted, its id unique, and the tell and ask paths' one-step
constructors."""

from __future__ import annotations

import pytest

from baton.mailboxes import Envelope
from baton.mailboxes.envelope import asked, told


def test_envelope_is_immutable_and_slotted() -> None:
    """An envelope cannot be changed or given new attributes; ids are unique."""
    first, second = Envelope("a", 1), Envelope("a", 1)
    with pytest.raises(AttributeError):
        first.attempt = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        first.extra = 1  # type: ignore[attr-defined]
    assert first.id != second.id
    retried = first.retried()
    assert (first.id, 2) == (retried.id, retried.attempt)


def test_a_told_envelope_is_the_envelope_the_constructor_makes() -> None:
    """`told`, the tell path's one-step constructor, gives an Envelope with every field as
    `Envelope(recipient, payload, sender)` sets it, and an id of its own."""
    made, fast = Envelope("a", "hi", "b"), told("a", "hi", "b")
    assert Envelope is type(fast)
    assert made._replace(seq=0, created_at=0.0) == fast._replace(seq=0, created_at=0.0)
    assert (made.seq + 1, made.origin) == (fast.seq, fast.origin)
    assert made.created_at <= fast.created_at


def test_an_asked_envelope_is_the_envelope_the_constructor_makes() -> None:
    """`asked`, the ask path's one-step constructor, gives an Envelope with every field as
    `Envelope(recipient, payload, sender, correlation_id=..., reply_to=...)` sets it."""
    made = Envelope("a", "hi", "b", correlation_id="c", reply_to="r")
    fast = asked("a", "hi", "b", "c", "r")
    assert Envelope is type(fast)
    assert made._replace(seq=0, created_at=0.0) == fast._replace(seq=0, created_at=0.0)
    assert (made.seq + 1, made.origin) == (fast.seq, fast.origin)
    assert made.created_at <= fast.created_at
