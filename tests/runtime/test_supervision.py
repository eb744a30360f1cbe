"""Supervision: retries, dead letters, restart backoff and the restart-intensity limit."""

from __future__ import annotations

import re
from typing import ClassVar

import anyio
import pytest
from anyio.lowlevel import checkpoint
from pydantic import BaseModel

from baton import Actor, ActorDeadError, HandlerFailedError, Runtime, SupervisorPolicy, handler
from baton.errors import UsageError
from baton.mailboxes import Envelope


class FakeTime:
    """A clock that only moves when told to, and a sleep that records instead of waiting."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await checkpoint()

    def policy(self, **overrides: float) -> SupervisorPolicy:
        settings: dict[str, float] = {"backoff_initial": 1.0, "backoff_factor": 2.0}
        settings.update(overrides)
        return SupervisorPolicy(clock=self.clock, sleep=self.sleep, **settings)  # type: ignore[arg-type]


class Work(BaseModel):
    n: int
    fail_times: int = 0


class Ping(BaseModel):
    pass


class Refuse(BaseModel):
    n: int


class Flaky(Actor):
    """Fails each `Work` message `fail_times` times; records lifecycle calls across restarts."""

    log: ClassVar[list[str]] = []
    attempts: ClassVar[dict[int, int]] = {}

    def __init__(self) -> None:
        Flaky.log.append("init")

    async def on_start(self) -> None:
        Flaky.log.append("start")

    async def on_stop(self) -> None:
        Flaky.log.append("stop")

    async def on_failure(self, error: Exception, envelope: Envelope) -> None:
        Flaky.log.append(f"failure {envelope.payload.n} attempt {envelope.attempt}: {error}")

    @handler
    async def work(self, msg: Work) -> int:
        seen = Flaky.attempts.get(msg.n, 0) + 1
        Flaky.attempts[msg.n] = seen
        if seen <= msg.fail_times:
            raise ValueError(f"boom {seen}")
        return msg.n

    @handler
    async def ping(self, msg: Ping) -> str:
        return "pong"


@pytest.fixture(autouse=True)
def _reset_flaky() -> None:
    Flaky.log = []
    Flaky.attempts = {}


async def test_a_failing_message_is_retried_then_dead_lettered_and_the_actor_lives() -> None:
    """A handler that always raises is tried max_attempts times; ask gets HandlerFailedError."""
    time = FakeTime()
    async with Runtime.open(policy=time.policy()) as rt:
        await rt.spawn("flaky", Flaky)
        with pytest.raises(HandlerFailedError) as caught:
            await rt.ask("flaky", Work(n=1, fail_times=99))
        assert isinstance(caught.value.__cause__, ValueError)
        assert "boom 3" in str(caught.value)
        assert 3 == Flaky.attempts[1]
        (letter,) = list(rt.dead_letters)
        assert (1, 3) == (letter.envelope.payload.n, letter.envelope.attempt)
        assert "failed 3 time(s)" in letter.reason
        assert "ValueError: boom 3" in letter.reason
        assert "pong" == await rt.ask("flaky", Ping())
    failures = [line for line in Flaky.log if line.startswith("failure")]
    assert [f"failure 1 attempt {a}: boom {a}" for a in (1, 2, 3)] == failures


async def test_a_retry_that_succeeds_answers_the_ask() -> None:
    """A message that fails twice then succeeds returns its result to the asker."""
    time = FakeTime()
    async with Runtime.open(policy=time.policy()) as rt:
        await rt.spawn("flaky", Flaky)
        assert 7 == await rt.ask("flaky", Work(n=7, fail_times=2))
        assert [] == list(rt.dead_letters)


async def test_a_told_message_that_keeps_failing_is_dead_lettered() -> None:
    """A tell whose handler always raises ends in the dead letters with the error."""
    time = FakeTime()
    async with Runtime.open(policy=time.policy()) as rt:
        await rt.spawn("flaky", Flaky)
        await rt.tell("flaky", Work(n=2, fail_times=99))
        assert "pong" == await rt.ask("flaky", Ping())
        assert ["ValueError: boom 3"] == [
            d.reason.split("last error: ")[1] for d in rt.dead_letters
        ]


async def test_restart_replaces_the_instance_after_an_exponential_backoff() -> None:
    """Each failure stops the old instance, waits 1, 2, 4 s, then starts a fresh one."""
    time = FakeTime()
    async with Runtime.open(policy=time.policy(max_attempts=4)) as rt:
        await rt.spawn("flaky", Flaky)
        assert 5 == await rt.ask("flaky", Work(n=5, fail_times=3))
        assert [1.0, 2.0, 4.0] == time.sleeps
        status = rt.status()[0]
        assert (3, 3, "running") == (status.restarts, status.failures, status.state)
    assert 4 == Flaky.log.count("init")  # the original and three replacements
    assert 4 == Flaky.log.count("start")


async def test_backoff_starts_over_after_a_success() -> None:
    """After a handled message the next failure waits the initial backoff again."""
    time = FakeTime()
    async with Runtime.open(policy=time.policy()) as rt:
        await rt.spawn("flaky", Flaky)
        await rt.ask("flaky", Work(n=1, fail_times=2))
        await rt.ask("flaky", Work(n=2, fail_times=1))
    assert [1.0, 2.0, 1.0] == time.sleeps


async def test_backoff_is_capped() -> None:
    """The backoff never exceeds backoff_max."""
    time = FakeTime()
    policy = time.policy(max_attempts=6, backoff_max=3.0, max_restarts=10)
    async with Runtime.open(policy=policy) as rt:
        await rt.spawn("flaky", Flaky)
        await rt.ask("flaky", Work(n=1, fail_times=5))
    assert [1.0, 2.0, 3.0, 3.0, 3.0] == time.sleeps


async def test_too_many_restarts_in_the_window_stop_the_actor_without_a_cooldown() -> None:
    """With cooldown=0, past max_restarts within restart_window the actor is stopped and
    reported, not restarted."""
    time = FakeTime()
    gate = anyio.Event()
    policy = time.policy(max_restarts=2, max_attempts=5, cooldown=0)
    async with Runtime.open(policy=policy) as rt:
        await rt.spawn("flaky", Flaky)
        with pytest.raises(ActorDeadError, match="restart intensity exceeded"):
            await rt.ask("flaky", Work(n=1, fail_times=99))
        assert not rt.is_alive("flaky")
        status = rt.status()[0]
        assert "failed" == status.state
        assert status.stop_reason is not None
        assert "2 restarts in 60s" in status.stop_reason
        with pytest.raises(ActorDeadError):
            await rt.tell("flaky", Ping())
        assert [1] == [d.envelope.payload.n for d in rt.dead_letters]
        gate.set()
    assert 2 == len(time.sleeps)


async def test_restarts_spread_beyond_the_window_are_allowed() -> None:
    """Failures further apart than restart_window never trip the intensity limit."""
    time = FakeTime()

    async def slow_sleep(seconds: float) -> None:
        time.sleeps.append(seconds)
        time.now += 61.0
        await checkpoint()

    policy = SupervisorPolicy(
        max_restarts=1, max_attempts=10, clock=time.clock, sleep=slow_sleep, backoff_initial=1.0
    )
    async with Runtime.open(policy=policy) as rt:
        await rt.spawn("flaky", Flaky)
        assert 3 == await rt.ask("flaky", Work(n=3, fail_times=5))
        assert rt.is_alive("flaky")


async def test_queued_messages_of_a_stopped_actor_are_dead_lettered() -> None:
    """When the supervisor gives up, what was still queued goes to the dead letters."""
    time = FakeTime()
    async with Runtime.open(policy=time.policy(max_restarts=0, max_attempts=5, cooldown=0)) as rt:
        await rt.spawn("flaky", Flaky)
        rt.tell_nowait("flaky", Work(n=1, fail_times=99))
        rt.tell_nowait("flaky", Work(n=2))
        rt.tell_nowait("flaky", Work(n=3))
        with pytest.raises(ActorDeadError):
            await rt.ask("flaky", Ping())
        letters = list(rt.dead_letters)
    assert [1, 2, 3] == [
        d.envelope.payload.n for d in letters if isinstance(d.envelope.payload, Work)
    ]
    assert all("restart intensity exceeded" in d.reason for d in letters)


async def test_a_usage_error_is_answered_at_once_without_a_restart() -> None:
    """A handler refusing a bad request (UsageError) gets no retry: the asker sees that error,
    and only that (no dead letter)."""

    class Picky(Flaky):
        @handler
        async def refuse(self, msg: Refuse) -> None:
            raise UsageError(f"bad request {msg.n}")

    time = FakeTime()
    async with Runtime.open(policy=time.policy()) as rt:
        await rt.spawn("picky", Picky)
        with pytest.raises(UsageError, match="bad request 4"):
            await rt.ask("picky", Refuse(n=4))
        assert (0, []) == (rt.status()[0].restarts, time.sleeps)
        assert [] == list(rt.dead_letters)


async def test_a_failing_on_failure_hook_does_not_break_supervision() -> None:
    """An on_failure hook that raises is logged and the retry still happens."""

    class BadHook(Flaky):
        async def on_failure(self, error: Exception, envelope: Envelope) -> None:
            raise RuntimeError("hook broke")

    time = FakeTime()
    async with Runtime.open(policy=time.policy()) as rt:
        await rt.spawn("bad", BadHook)
        assert 4 == await rt.ask("bad", Work(n=4, fail_times=1))


class CoolDownTime(FakeTime):
    """FakeTime whose sleep of `cooldown` seconds waits until the test ends the cool-down."""

    def __init__(self, cooldown: float) -> None:
        super().__init__()
        self.cooldown = cooldown
        self.cooling = anyio.Event()
        self.over = anyio.Event()

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if seconds == self.cooldown:
            self.cooling.set()
            await self.over.wait()
        await checkpoint()


async def test_a_spent_restart_budget_cools_down_then_restarts_the_actor() -> None:
    """Past max_restarts the actor cools down (status says until when; messages queue), then
    restarts with a whole budget and goes on with the message in hand and the queued ones."""
    time = CoolDownTime(cooldown=60.0)
    policy = time.policy(max_restarts=2, max_attempts=5, cooldown=60.0)
    async with Runtime.open(policy=policy) as rt, anyio.create_task_group() as tg:
        await rt.spawn("flaky", Flaky)
        answers: list[object] = []

        async def ask_work() -> None:
            answers.append(await rt.ask("flaky", Work(n=1, fail_times=3)))

        tg.start_soon(ask_work)
        await time.cooling.wait()
        status = rt.status()[0]
        assert ("cooling_down", True) == (status.state, rt.is_alive("flaky"))
        assert status.stop_reason is not None
        assert re.fullmatch(
            r"cooling down until \d\d:\d\d:\d\d: restart intensity exceeded \(2 restarts in "
            r"60s\); last error: ValueError: boom 3",
            status.stop_reason,
        )
        await rt.tell("flaky", Ping())  # waits in the mailbox meanwhile
        assert 1 == rt.status()[0].mailbox_depth
        time.over.set()
        assert "pong" == await rt.ask("flaky", Ping())
        status = rt.status()[0]
        assert ([1], "running", None, 3) == (
            answers,
            status.state,
            status.stop_reason,
            status.restarts,
        )
        assert [] == list(rt.dead_letters)
    assert 60.0 in time.sleeps


async def test_stopping_the_runtime_does_not_wait_out_a_cooldown() -> None:
    """Leaving `Runtime.open` while an actor cools down stops it at once, not after the
    shutdown timeout; the asker still waiting learns that the actor stopped."""
    time = CoolDownTime(cooldown=60.0)
    policy = time.policy(max_restarts=0, max_attempts=5, cooldown=60.0)
    with anyio.fail_after(30):
        async with Runtime.open(policy=policy, shutdown_timeout=3600) as rt:
            await rt.spawn("flaky", Flaky)
            async with anyio.create_task_group() as tg:

                async def ask_work() -> None:
                    with pytest.raises(ActorDeadError):
                        await rt.ask("flaky", Work(n=1, fail_times=99))

                tg.start_soon(ask_work)
                await time.cooling.wait()
                await rt.stop("flaky")
            assert "stopped" == rt.status()[0].state
