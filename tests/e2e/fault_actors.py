"""Actors the fault tests host in `baton run --actor NAME=fault_actors:CLASS`."""

from __future__ import annotations

import anyio
from pydantic import BaseModel

from baton import Actor, handler


class Job(BaseModel):
    n: int


class Stuck(Actor):
    """Never finishes a job: the first is in flight for ever, the rest stay queued."""

    @handler
    async def job(self, msg: Job) -> None:
        await anyio.sleep_forever()
