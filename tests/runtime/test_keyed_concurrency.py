"""Keyed actors: several keys handled at once, each key's messages one at a time, in order."""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path

import anyio
import pytest
from anyio import wait_all_tasks_blocked
from anyio.lowlevel import checkpoint
from pydantic import BaseModel

from baton import Actor, Runtime, SupervisorPolicy, handler
from baton.errors import UsageError
from baton.mailboxes.memory import MemoryMailbox
from baton.runtime._keyed import InstanceGate, KeyedDispatcher


class Job(BaseModel):
    key: str
    n: int
    fail_times: int = 0
    refuse: bool = False


class Probe:
    """What the handlers did, in order, and the gates that hold chosen messages in flight."""

    def __init__(self, held: set[tuple[str, int]] = frozenset()) -> None:  # type: ignore[assignment]
        self.events: list[tuple[str, str, int, int]] = []  # (what, key, n, attempt)
        self.held = {job: anyio.Event() for job in held}
        self.running: set[str] = set()
        self.most_at_once = 0
        self.instances = 0
        self.stops = 0

    def release(self, key: str, n: int) -> None:
        self.held[(key, n)].set()

    def release_all(self) -> None:
        for gate in self.held.values():
            gate.set()

    def started(self, what: str = "start") -> list[tuple[str, int]]:
        return [(key, n) for kind, key, n, _ in self.events if kind == what]


class Keyed(Actor):
    """Handles `Job`s by their key, two keys at once; fails or refuses a job when told to."""

    actor_max_concurrent_keys = 2

    def __init__(self, probe: Probe, limit: int = 2) -> None:
        self.probe = probe
        self.actor_max_concurrent_keys = limit
        probe.instances += 1

    async def on_stop(self) -> None:
        self.probe.stops += 1

    def actor_key(self, message: object) -> Hashable | None:
        return message.key if isinstance(message, Job) else None

    @handler
    async def job(self, message: Job) -> str:
        probe = self.probe
        envelope = self.actor_envelope
        assert envelope is not None
        attempt = envelope.attempt
        assert message.key not in probe.running, "two handlers of one key at once"
        probe.running.add(message.key)
        probe.most_at_once = max(probe.most_at_once, len(probe.running))
        probe.events.append(("start", message.key, message.n, attempt))
        try:
            gate = probe.held.get((message.key, message.n))
            if gate is not None:
                await gate.wait()
            await checkpoint()
            # The envelope is this task's own, whatever other keys handled meanwhile.
            assert envelope is self.actor_envelope
            if message.refuse:
                raise UsageError(f"job {message.n} is not for this actor")
            if attempt <= message.fail_times:
                raise RuntimeError(f"job {message.key}{message.n} failed")
        finally:
            probe.running.discard(message.key)
        probe.events.append(("end", message.key, message.n, attempt))
        return f"{message.key}{message.n}"


async def settled(rt: Runtime, probe: Probe, ends: int) -> None:
    """Wait (with a deadline) until `ends` handlers have returned and everything is idle."""
    with anyio.fail_after(10):
        while len(probe.started("end")) < ends or rt.status()[0].busy:
            await wait_all_tasks_blocked()


async def quiet() -> None:
    await wait_all_tasks_blocked()


def no_wait_policy() -> SupervisorPolicy:
    async def no_sleep(_: float) -> None:
        await checkpoint()

    return SupervisorPolicy(sleep=no_sleep, backoff_initial=0.01)


async def test_one_keys_messages_run_in_order_while_other_keys_overtake() -> None:
    """A key's messages start only once the one before has returned, however long it takes;
    another key's message finishes meanwhile."""
    probe = Probe(held={("a", 1)})
    async with Runtime.open() as rt:
        await rt.spawn("k", Keyed, probe)
        for n in (1, 2, 3):
            await rt.tell("k", Job(key="a", n=n))
        await rt.tell("k", Job(key="b", n=1))
        await quiet()
        assert [("a", 1), ("b", 1)] == probe.started()
        assert [("b", 1)] == probe.started("end")
        probe.release("a", 1)
        await settled(rt, probe, 4)
    assert [("a", 1), ("b", 1), ("a", 2), ("a", 3)] == probe.started()
    assert [("b", 1), ("a", 1), ("a", 2), ("a", 3)] == probe.started("end")


async def test_no_more_keys_than_the_limit_run_and_a_key_beyond_it_waits() -> None:
    """With a limit of 2, a third key waits until one of the two running keys is done."""
    probe = Probe(held={("a", 1), ("b", 1), ("c", 1)})
    async with Runtime.open() as rt:
        await rt.spawn("k", Keyed, probe)
        for key in "abc":
            await rt.tell("k", Job(key=key, n=1))
        await quiet()
        assert [("a", 1), ("b", 1)] == probe.started()
        assert (("a", "b"), 1) == (rt.status()[0].working_on, rt.status()[0].mailbox_depth)
        probe.release("b", 1)
        await quiet()
        assert [("a", 1), ("b", 1), ("c", 1)] == probe.started()
        assert ("a", "c") == rt.status()[0].working_on
        probe.release_all()
        await settled(rt, probe, 3)
        assert () == rt.status()[0].working_on
    assert 2 == probe.most_at_once


async def test_a_key_with_many_messages_does_not_starve_a_key_that_arrives_later() -> None:
    """While keys wait, a key that still has messages goes to the back of the line after
    each one: the newcomer runs before the busy key's next message."""
    probe = Probe(held={("a", 1), ("b", 1), ("c", 1)})
    async with Runtime.open() as rt:
        await rt.spawn("k", Keyed, probe)
        for n in range(1, 6):
            await rt.tell("k", Job(key="a", n=n))
        await rt.tell("k", Job(key="b", n=1))
        await rt.tell("k", Job(key="c", n=1))
        await quiet()
        probe.release("a", 1)
        await quiet()
        assert [("a", 1), ("b", 1), ("c", 1)] == probe.started()
        probe.release_all()
        await settled(rt, probe, 7)
    assert [("a", n) for n in range(1, 6)] == [job for job in probe.started() if job[0] == "a"]


async def test_one_keys_failure_restarts_only_once_the_others_in_flight_have_returned() -> None:
    """A failing handler's restart waits for another key's handler in flight, which finishes
    undisturbed on the old instance; then the failed message is retried, once."""
    probe = Probe(held={("b", 1)})
    async with Runtime.open(policy=no_wait_policy()) as rt:
        await rt.spawn("k", Keyed, probe)
        await rt.tell("k", Job(key="b", n=1))
        await quiet()
        async with anyio.create_task_group() as tg:
            replies: dict[str, object] = {}

            async def ask(job: Job) -> None:
                replies[job.key] = await rt.ask("k", job, timeout=10)

            tg.start_soon(ask, Job(key="a", n=1, fail_times=1))
            await quiet()
            # a failed; its restart waits for b: nothing was stopped or restarted yet.
            assert ([("b", 1), ("a", 1)], 0, 1) == (probe.started(), probe.stops, probe.instances)
            probe.release("b", 1)
        assert "a1" == replies["a"]
        await settled(rt, probe, 2)
        status = rt.status()[0]
    assert [("b", 1, 1), ("a", 1, 2)] == [
        (key, n, attempt) for kind, key, n, attempt in probe.events if kind == "end"
    ]
    assert (1, 1, 2) == (status.failures, status.restarts, probe.instances)


async def test_a_spent_restart_budget_without_a_cooldown_stops_every_key() -> None:
    """With `cooldown = 0`, a key whose failures spend the restart budget stops the actor:
    the other key's message in flight finishes first, and what waits is dead-lettered."""

    async def no_sleep(_: float) -> None:
        await checkpoint()

    policy = SupervisorPolicy(sleep=no_sleep, max_restarts=0, cooldown=0)
    probe = Probe(held={("b", 1)})
    async with Runtime.open(policy=policy) as rt:
        await rt.spawn("k", Keyed, probe)
        await rt.tell("k", Job(key="b", n=1))
        await quiet()
        await rt.tell("k", Job(key="a", n=1, fail_times=9))
        await rt.tell("k", Job(key="a", n=2))
        await rt.tell("k", Job(key="b", n=2))
        await quiet()
        probe.release("b", 1)
        with anyio.fail_after(5):
            await rt.wait_stopped("k")
        letters = sorted((d.envelope.payload.key, d.envelope.payload.n) for d in rt.dead_letters)
        assert "failed" == rt.status()[0].state
    assert [("b", 1)] == probe.started("end")
    assert [("a", 1), ("a", 2), ("b", 2)] == letters


async def test_every_ask_gets_its_own_reply_and_a_refusal_stays_with_its_asker() -> None:
    """Asks to different keys at once are each answered with their own handler's value; a
    refused one raises to its asker only and is not a dead letter."""
    probe = Probe()
    async with Runtime.open() as rt:
        await rt.spawn("k", Keyed, probe, 3)
        replies: dict[tuple[str, int], object] = {}

        async def ask(job: Job) -> None:
            try:
                replies[(job.key, job.n)] = await rt.ask("k", job, timeout=10)
            except UsageError as error:
                replies[(job.key, job.n)] = type(error).__name__

        async with anyio.create_task_group() as tg:
            for key in "abc":
                for n in (1, 2):
                    tg.start_soon(ask, Job(key=key, n=n, refuse=(key, n) == ("b", 1)))
        expected = {(k, n): f"{k}{n}" for k in "abc" for n in (1, 2)}
        expected[("b", 1)] = "UsageError"
        assert expected == replies
        assert [] == list(rt.dead_letters)


async def test_shutdown_finishes_the_keys_in_flight_and_their_queued_messages() -> None:
    """Stopped while two keys are in flight with more queued behind them, the actor handles
    all of them before it stops; nothing is dead-lettered."""
    probe = Probe(held={("a", 1), ("b", 1)})
    async with Runtime.open(shutdown_timeout=10) as rt:
        await rt.spawn("k", Keyed, probe)
        for n in (1, 2):
            for key in "ab":
                await rt.tell("k", Job(key=key, n=n))
        await quiet()
        async with anyio.create_task_group() as tg:
            tg.start_soon(rt.stop, "k")
            await quiet()
            probe.release_all()
        assert ("stopped", 4) == (rt.status()[0].state, rt.status()[0].handled)
        assert [] == list(rt.dead_letters)
    assert [("a", 1), ("a", 2)] == [job for job in probe.started("end") if job[0] == "a"]


async def test_in_memory_what_the_deadline_leaves_behind_its_key_is_dead_lettered() -> None:
    """Past the shutdown deadline, messages waiting behind a key in flight are dead letters
    (in memory nothing else keeps them), as are those still in the mailbox."""
    probe = Probe(held={("a", 1), ("b", 1)})
    async with Runtime.open(shutdown_timeout=0) as rt:
        await rt.spawn("k", Keyed, probe)
        for n in (1, 2):
            for key in "ab":
                await rt.tell("k", Job(key=key, n=n))
        await quiet()
        await rt.stop("k")
        letters = sorted((d.envelope.payload.key, d.envelope.payload.n) for d in rt.dead_letters)
    assert [("a", 2), ("b", 2)] == letters


async def test_a_durable_mailbox_shutdown_drains_every_key(tmp_path: Path) -> None:
    """With SQLite mailboxes the drain handles and acks every key's messages: the next
    start of the workspace has nothing to deliver again."""
    probe = Probe(held={("a", 1), ("b", 1)})
    async with Runtime.open(tmp_path, shutdown_timeout=10) as rt:
        await rt.spawn("k", Keyed, probe)
        for n in (1, 2):
            for key in "ab":
                await rt.tell("k", Job(key=key, n=n))
        await quiet()
        async with anyio.create_task_group() as tg:
            tg.start_soon(rt.stop, "k")
            await quiet()
            probe.release_all()
    again = Probe()
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("k", Keyed, again)
        assert "z1" == await rt.ask("k", Job(key="z", n=1), timeout=10)
        assert [("z", 1)] == again.started()
    assert 4 == len(probe.started("end"))


async def test_a_durable_mailbox_delivers_again_what_a_crash_left_in_flight_or_queued(
    tmp_path: Path,
) -> None:
    """Stopped without a drain while two keys are in flight and a third message waits behind
    one of them, the next start handles all three, each key in order, as second attempts."""
    probe = Probe(held={("a", 1), ("b", 1)})
    async with Runtime.open(tmp_path, shutdown_timeout=0) as rt:
        await rt.spawn("k", Keyed, probe)
        for key, n in (("a", 1), ("b", 1), ("a", 2)):
            await rt.tell("k", Job(key=key, n=n))
        with anyio.fail_after(5):
            while (keyed := rt._cells["k"]._keyed) is None or 1 != keyed.queued():
                await quiet()
        await quiet()
        assert [("a", 1), ("b", 1)] == probe.started()
    again = Probe()
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("k", Keyed, again)
        await settled(rt, again, 3)
    ends = [(key, n, attempt) for kind, key, n, attempt in again.events if kind == "end"]
    assert [("a", 1, 2), ("a", 2, 2)] == [end for end in ends if end[0] == "a"]
    assert [("b", 1, 2)] == [end for end in ends if end[0] == "b"]


async def test_a_restart_waits_for_the_handlers_in_flight_and_holds_new_ones() -> None:
    """`InstanceGate`: `exclusive` begins once every entered handler has left, and a handler
    that arrives meanwhile enters only after it."""
    gate = InstanceGate()
    order: list[str] = []
    left = anyio.Event()

    async def handler_in_flight() -> None:
        async with gate.entered():
            order.append("in flight")
            await left.wait()
        order.append("left")

    async def restart() -> None:
        async with gate.exclusive():
            order.append("restart")

    async def newcomer() -> None:
        async with gate.entered():
            order.append("newcomer")

    async with anyio.create_task_group() as tg:
        tg.start_soon(handler_in_flight)
        await wait_all_tasks_blocked()
        tg.start_soon(restart)
        await wait_all_tasks_blocked()
        tg.start_soon(newcomer)
        await wait_all_tasks_blocked()
        assert ["in flight"] == order
        left.set()
    assert ["in flight", "left", "restart", "newcomer"] == order


@pytest.mark.parametrize("limit", [0, -1])
def test_the_dispatcher_refuses_a_limit_below_one(limit: int) -> None:
    """A keyed dispatcher needs at least one key at a time."""

    async def handle(*_: object) -> None:
        return None

    box = MemoryMailbox("k")
    with pytest.raises(ValueError, match="must be >= 1"):
        KeyedDispatcher("k", box, key_of=lambda _: None, limit=limit, bound=1, handle=handle)
    box.drain_nowait()
