"""Actors the end-to-end tests host in `baton run --actor NAME=e2e_actors:CLASS`."""

from __future__ import annotations

from pydantic import BaseModel

from baton import Actor, handler


class Hello(BaseModel):
    name: str


class Greeting(BaseModel):
    text: str


class Boom(BaseModel):
    pass


class Greeter(Actor):
    @handler
    async def greet(self, msg: Hello) -> Greeting:
        return Greeting(text=f"hi {msg.name}")


class Failing(Actor):
    @handler
    async def boom(self, msg: Boom) -> None:
        raise ValueError("boom")
