"""Actors: the `Actor` base class, `@handler`, `ActorRef`, agent actors and model clients."""

from baton.actors.actor import Actor, handler
from baton.actors.ref import ActorRef

__all__ = ["Actor", "ActorRef", "handler"]
