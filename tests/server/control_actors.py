"""Small actors and a fake scheduler the control API, client and CLI tests talk to."""

from __future__ import annotations

from typing import Any

import anyio
from pydantic import BaseModel

from baton import Actor, handler
from baton.pipeline.messages import Approve, Reject, ScenarioQuery, StartScenario
from baton.pipeline.scenario_state import ScenarioRefused, ScenarioState
from baton.runtime import ContextFill, ContextProviders, SupervisorPolicy


class Hello(BaseModel):
    name: str


class Greeting(BaseModel):
    text: str


class Boom(BaseModel):
    pass


class Wait(BaseModel):
    pass


async def no_sleep(_: float) -> None:
    await anyio.lowlevel.checkpoint()


def quick_policy() -> SupervisorPolicy:
    """Supervision without backoff waits, so failing handlers settle at once."""
    return SupervisorPolicy(sleep=no_sleep)


class Greeter(Actor):
    @handler
    async def greet(self, msg: Hello) -> Greeting:
        return Greeting(text=f"hi {msg.name}")


class Failing(Actor):
    @handler
    async def boom(self, msg: Boom) -> None:
        raise ValueError("boom")


class Stuck(Actor):
    """Never answers `Wait` until `release` is set."""

    def __init__(self, release: anyio.Event) -> None:
        self.release = release

    @handler
    async def wait(self, msg: Wait) -> None:
        await self.release.wait()


class Reporter(Actor):
    """Reports a fixed context fill through the runtime's provider registry."""

    def __init__(self, providers: ContextProviders, fill: ContextFill) -> None:
        self.providers = providers
        self.fill = fill

    async def on_start(self) -> None:
        self.providers.register(self.actor_name, self.report)

    async def on_stop(self) -> None:
        self.providers.unregister(self.actor_name, self.report)

    def report(self) -> ContextFill:
        return self.fill


class FakeScheduler(Actor):
    """Keeps scenarios in a dict shared across restarts; answers an unknown scenario, or a
    decision with nothing pending, like the real one (None, `ScenarioRefused`)."""

    def __init__(self, scenarios: dict[str, ScenarioState]) -> None:
        self.scenarios = scenarios

    @handler
    async def start(self, msg: StartScenario) -> ScenarioState:
        state = ScenarioState(
            scenario=msg.scenario,
            phase="awaiting_approval",
            requirement=msg.requirement,
            pending_approval={"handoff_type": "init_to_execute"},
            started=True,
        )
        self.scenarios[msg.scenario] = state
        return state

    @handler
    async def query(self, msg: ScenarioQuery) -> Any:
        if msg.scenario is None:
            return list(self.scenarios.values())
        return self.scenarios.get(msg.scenario)

    @handler
    async def approve(self, msg: Approve) -> ScenarioState | ScenarioRefused:
        return self._move(msg.scenario, "executing", None)

    @handler
    async def reject(self, msg: Reject) -> ScenarioState | ScenarioRefused:
        return self._move(msg.scenario, "designing", msg.reason)

    def _move(
        self, scenario: str, phase: Any, reason: str | None
    ) -> ScenarioState | ScenarioRefused:
        if scenario not in self.scenarios:
            return ScenarioRefused(scenario=scenario, reason="no such scenario")
        if self.scenarios[scenario].phase != "awaiting_approval":
            current = self.scenarios[scenario].phase
            return ScenarioRefused(scenario=scenario, phase=current, reason="nothing pending")
        state = self.scenarios[scenario].model_copy(
            update={"phase": phase, "reason": reason, "pending_approval": None, "started": False}
        )
        self.scenarios[scenario] = state
        return state
