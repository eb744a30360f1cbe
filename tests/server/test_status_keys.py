"""`baton status` names the keys a keyed actor works on: an agent's conversations in flight."""

from __future__ import annotations

from collections.abc import Hashable

import anyio
import httpx2
from pydantic import BaseModel

from baton import Actor, Runtime, handler
from baton.server import create_control_app
from baton.server._render import render_status
from baton.server._status_models import ActorReport, StatusReport


class Round(BaseModel):
    conversation: str


class Agentlike(Actor):
    """Keyed by conversation, like an agent; each round waits until released."""

    actor_max_concurrent_keys = 4

    def __init__(self, release: anyio.Event) -> None:
        self.release = release

    def actor_key(self, message: object) -> Hashable | None:
        return message.conversation if isinstance(message, Round) else None

    @handler
    async def round(self, message: Round) -> None:
        await self.release.wait()


async def test_the_status_report_lists_the_conversations_in_flight() -> None:
    """GET /status gives a keyed actor's keys in flight, oldest first; a plain actor none."""
    release = anyio.Event()
    async with Runtime.open() as runtime:
        await runtime.spawn("execute", Agentlike, release)
        app = create_control_app(runtime, on_stop=lambda: None)
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://baton") as http:
            for conversation in ("s1", "s2"):
                await runtime.tell("execute", Round(conversation=conversation))
            await anyio.wait_all_tasks_blocked()
            body = (await http.get("/status")).json()
            release.set()
    (actor,) = body["actors"]
    assert ["s1", "s2"] == actor["working_on"]


def test_status_shows_what_each_agent_works_on_under_the_table() -> None:
    """One line per keyed actor that works on something; none for an idle one."""

    def actor(name: str, working_on: list[str]) -> ActorReport:
        return ActorReport(
            name=name,
            actor_type="ExecuteActor",
            state="running",
            mailbox_depth=0,
            mailbox_capacity=1024,
            handled=3,
            failures=0,
            restarts=0,
            stop_reason=None,
            working_on=working_on,
        )

    report = StatusReport(
        pid=7,
        workspace="/ws",
        actors=[actor("execute", ["leave_application", "leave_copy"]), actor("init", [])],
        scheduler=False,
        scenarios=[],
        pending_approvals=[],
        dead_letters=0,
        token_log=None,
        token_records=0,
    )
    lines = render_status(report).splitlines()
    assert ["  execute: working on leave_application, leave_copy"] == [
        line for line in lines if "working on" in line
    ]
