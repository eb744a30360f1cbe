"""Runtime: spawn, tell/ask, lookup, ordering, backpressure, shutdown."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from anyio import wait_all_tasks_blocked
from anyio.lowlevel import checkpoint
from pydantic import BaseModel

from baton import (
    Actor,
    ActorDeadError,
    AskTimeoutError,
    Runtime,
    UnhandledMessageError,
    UnknownActorError,
    handler,
)
from baton.errors import ConfigError, UsageError
from baton.mailboxes.errors import InvalidMessageError, MailboxFullError
from baton.runtime.errors import ActorExistsError


class Hello(BaseModel):
    name: str


class Greeting(BaseModel):
    text: str


class Note(BaseModel):
    sender: str
    n: int


class Unknown(BaseModel):
    pass


class Greeter(Actor):
    @handler
    async def greet(self, msg: Hello) -> Greeting:
        return Greeting(text=f"hi {msg.name}")


class Recorder(Actor):
    """Records notes; yields to the loop mid-handler so interleaving would show."""

    def __init__(self, seen: list[tuple[str, int]], gate: anyio.Event | None = None) -> None:
        self.seen = seen
        self.gate = gate

    @handler
    async def note(self, msg: Note) -> int:
        if self.gate is not None:
            await self.gate.wait()
        await checkpoint()
        self.seen.append((msg.sender, msg.n))
        await checkpoint()
        return msg.n


class Lifecycle(Actor):
    def __init__(self, events: list[str], gate: anyio.Event | None = None) -> None:
        self.events = events
        self.gate = gate

    async def on_start(self) -> None:
        self.events.append("start")

    async def on_stop(self) -> None:
        self.events.append("stop")

    @handler
    async def note(self, msg: Note) -> int:
        if self.gate is not None:
            await self.gate.wait()
        self.events.append(f"note {msg.n}")
        return msg.n


async def test_ask_returns_the_handlers_reply() -> None:
    """`ask` returns what the handler returned (README.md, "Actors in your own code")."""
    async with Runtime.open() as rt:
        ref = await rt.spawn("greeter", Greeter)
        reply = await ref.ask(Hello(name="a"), timeout=5)
        assert Greeting(text="hi a") == reply
        assert Greeting(text="hi b") == await rt.ask("greeter", Hello(name="b"), timeout=5)


async def test_tell_is_handled_in_order_before_a_later_ask() -> None:
    """Told messages are handled, in order, before an ask sent after them."""
    seen: list[tuple[str, int]] = []
    async with Runtime.open() as rt:
        await rt.spawn("rec", Recorder, seen)
        for n in range(5):
            await rt.tell("rec", Note(sender="s", n=n))
        assert 99 == await rt.ask("rec", Note(sender="s", n=99), timeout=5)
    assert [("s", n) for n in [0, 1, 2, 3, 4, 99]] == seen


async def test_lookup_returns_a_working_ref() -> None:
    """`lookup` by name gives a ref equal to the one spawn returned."""
    async with Runtime.open() as rt:
        spawned = await rt.spawn("greeter", Greeter)
        found = rt.lookup("greeter")
        assert spawned == found
        assert found.is_alive
        assert Greeting(text="hi x") == await found.ask(Hello(name="x"))


async def test_unknown_actor_raises_for_tell_ask_and_lookup() -> None:
    """Addressing an unregistered name raises UnknownActorError naming it."""
    async with Runtime.open() as rt:
        await rt.spawn("greeter", Greeter)
        with pytest.raises(UnknownActorError, match="nobody"):
            await rt.tell("nobody", Hello(name="a"))
        with pytest.raises(UnknownActorError, match="greeter"):
            await rt.ask("nobody", Hello(name="a"))
        with pytest.raises(UnknownActorError):
            rt.lookup("nobody")


async def test_spawning_a_taken_name_is_refused() -> None:
    """A second spawn under a live actor's name raises ActorExistsError."""
    async with Runtime.open() as rt:
        await rt.spawn("greeter", Greeter)
        with pytest.raises(ActorExistsError):
            await rt.spawn("greeter", Greeter)


async def test_invalid_actor_name_is_refused() -> None:
    """Names with spaces or slashes are refused with a message saying what is allowed."""
    async with Runtime.open() as rt:
        with pytest.raises(UsageError, match="letters, digits"):
            await rt.spawn("bad name/x", Greeter)


async def test_failing_on_start_fails_spawn_and_registers_nothing() -> None:
    """If on_start raises, spawn raises it and the name stays free."""

    class Broken(Actor):
        async def on_start(self) -> None:
            raise RuntimeError("no database")

    async with Runtime.open() as rt:
        with pytest.raises(RuntimeError, match="no database"):
            await rt.spawn("broken", Broken)
        assert "broken" not in rt.names()
        await rt.spawn("broken", Greeter)


async def test_per_sender_order_holds_when_handlers_await() -> None:
    """Messages from each of several concurrent senders are handled in the order sent."""
    seen: list[tuple[str, int]] = []
    async with Runtime.open(mailbox_capacity=4) as rt:
        await rt.spawn("rec", Recorder, seen)

        async def sender(name: str) -> None:
            for n in range(30):
                await rt.tell("rec", Note(sender=name, n=n))
                if n % 3 == 0:
                    await checkpoint()

        async with anyio.create_task_group() as tg:
            for name in ("a", "b", "c"):
                tg.start_soon(sender, name)
        await rt.ask("rec", Note(sender="end", n=-1))
    for name in ("a", "b", "c"):
        assert list(range(30)) == [n for s, n in seen if s == name]


async def test_full_mailbox_blocks_the_sender_and_loses_nothing() -> None:
    """With the actor busy and its mailbox full, tell waits; once released all arrive in order."""
    seen: list[tuple[str, int]] = []
    gate = anyio.Event()
    sent: list[int] = []
    async with Runtime.open() as rt:
        await rt.spawn("rec", Recorder, seen, gate, mailbox_capacity=2)

        async def producer() -> None:
            for n in range(6):
                await rt.tell("rec", Note(sender="p", n=n))
                sent.append(n)

        async with anyio.create_task_group() as tg:
            tg.start_soon(producer)
            await wait_all_tasks_blocked()
            # One message in the handler, two in the mailbox, the fourth tell is waiting.
            assert [0, 1, 2] == sent
            assert 3 == rt.status()[0].mailbox_depth  # 2 buffered + 1 parked sender
            gate.set()
        await rt.ask("rec", Note(sender="p", n=6))
    assert [("p", n) for n in range(7)] == seen


async def test_tell_nowait_raises_when_the_mailbox_is_full() -> None:
    """`tell_nowait` raises MailboxFullError instead of waiting."""
    gate = anyio.Event()
    async with Runtime.open() as rt:
        await rt.spawn("rec", Recorder, [], gate, mailbox_capacity=1)
        rt.tell_nowait("rec", Note(sender="p", n=0))
        await wait_all_tasks_blocked()  # the actor takes n=0 and parks on the gate
        rt.tell_nowait("rec", Note(sender="p", n=1))
        with pytest.raises(MailboxFullError):
            rt.tell_nowait("rec", Note(sender="p", n=2))
        gate.set()


async def test_ask_of_an_unhandled_type_raises_and_the_actor_survives() -> None:
    """An ask with no matching handler raises UnhandledMessageError and is not a dead letter
    (the asker has the error); the actor still answers."""
    async with Runtime.open() as rt:
        await rt.spawn("greeter", Greeter)
        with pytest.raises(UnhandledMessageError, match="Unknown"):
            await rt.ask("greeter", Unknown())
        assert Greeting(text="hi a") == await rt.ask("greeter", Hello(name="a"))
        assert [] == list(rt.dead_letters)


async def test_tell_of_an_unhandled_type_is_dead_lettered() -> None:
    """A told message with no handler lands in the dead letters with the reason."""
    async with Runtime.open() as rt:
        await rt.spawn("greeter", Greeter)
        await rt.tell("greeter", Unknown())
        assert Greeting(text="hi a") == await rt.ask("greeter", Hello(name="a"))
        (letter,) = list(rt.dead_letters)
        assert "greeter" == letter.actor
        assert "no handler for 'Unknown'" in letter.reason


async def test_ask_timeout_then_the_late_reply_is_dropped() -> None:
    """A timed-out ask raises AskTimeoutError; its late reply goes nowhere and leaks nothing."""
    gate = anyio.Event()
    seen: list[tuple[str, int]] = []
    async with Runtime.open() as rt:
        await rt.spawn("rec", Recorder, seen, gate)
        with pytest.raises(AskTimeoutError):
            await rt.ask("rec", Note(sender="a", n=1), timeout=0.01)
        assert {} == rt._cells["rec"].pending
        gate.set()
        assert 2 == await rt.ask("rec", Note(sender="a", n=2), timeout=5)
        assert {} == rt._cells["rec"].pending
    assert [("a", 1), ("a", 2)] == seen


async def test_an_ask_times_out_while_it_waits_for_room_and_sends_nothing() -> None:
    """The deadline covers the wait for room in a full mailbox: the ask raises
    AskTimeoutError, its message never reaches the actor, and nothing is left pending."""
    gate = anyio.Event()
    seen: list[tuple[str, int]] = []
    async with Runtime.open() as rt:
        await rt.spawn("rec", Recorder, seen, gate, mailbox_capacity=1)
        rt.tell_nowait("rec", Note(sender="a", n=1))
        await wait_all_tasks_blocked()  # the actor holds n=1 at the gate
        rt.tell_nowait("rec", Note(sender="a", n=2))  # and the mailbox is full
        with pytest.raises(AskTimeoutError):
            await rt.ask("rec", Note(sender="a", n=3), timeout=0.01)
        assert {} == rt._cells["rec"].pending
        gate.set()
        assert 4 == await rt.ask("rec", Note(sender="a", n=4), timeout=5)
    assert [("a", 1), ("a", 2), ("a", 4)] == seen


async def test_an_ask_of_a_durable_mailbox_times_out_and_its_late_reply_is_dropped(
    tmp_path: Path,
) -> None:
    """On a durable mailbox (the send goes through a worker thread) a timed-out ask raises
    AskTimeoutError too; the message is still handled, and its reply goes nowhere."""
    gate = anyio.Event()
    seen: list[tuple[str, int]] = []
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("rec", Recorder, seen, gate)
        with pytest.raises(AskTimeoutError):
            await rt.ask("rec", Note(sender="a", n=1), timeout=0.05)
        assert {} == rt._cells["rec"].pending
        gate.set()
        assert 2 == await rt.ask("rec", Note(sender="a", n=2), timeout=5)
    assert [("a", 1), ("a", 2)] == seen


async def test_a_cancelled_asker_leaves_nothing_pending_and_its_reply_is_dropped() -> None:
    """An ask with a timeout whose caller is cancelled while it waits ends in the
    cancellation, leaves no pending entry, and the actor's late reply goes nowhere."""
    gate = anyio.Event()
    seen: list[tuple[str, int]] = []
    outcome: list[str] = []
    async with Runtime.open() as rt:
        await rt.spawn("rec", Recorder, seen, gate)

        async def asker() -> None:
            try:
                await rt.ask("rec", Note(sender="a", n=1), timeout=5)
            except BaseException as exc:
                outcome.append(type(exc).__name__)
                raise

        async with anyio.create_task_group() as tg:
            tg.start_soon(asker)
            await wait_all_tasks_blocked()
            tg.cancel_scope.cancel()
        assert {} == rt._cells["rec"].pending
        gate.set()
        assert 2 == await rt.ask("rec", Note(sender="a", n=2), timeout=5)
    assert ["CancelledError"] == outcome
    assert [("a", 1), ("a", 2)] == seen


async def test_shutdown_drains_queued_messages_then_calls_on_stop() -> None:
    """Leaving the runtime block handles everything already queued, then runs on_stop once."""
    events: list[str] = []
    async with Runtime.open() as rt:
        await rt.spawn("life", Lifecycle, events)
        for n in range(10):
            rt.tell_nowait("life", Note(sender="s", n=n))
        assert ["start"] == events  # nothing handled yet: the block ends with all 10 queued
    assert ["start", *[f"note {n}" for n in range(10)], "stop"] == events


async def test_shutdown_deadline_cancels_a_stuck_actor() -> None:
    """Past the drain deadline a stuck handler is cancelled; asks fail; leftovers dead-letter."""
    events: list[str] = []
    never = anyio.Event()
    outcome: list[BaseException] = []

    async def asker(rt: Runtime) -> None:
        try:
            await rt.ask("life", Note(sender="s", n=1), timeout=None)
        except ActorDeadError as exc:
            outcome.append(exc)

    async with anyio.create_task_group() as outer, Runtime.open(shutdown_timeout=0.05) as rt:
        await rt.spawn("life", Lifecycle, events, never)
        outer.start_soon(asker, rt)
        await wait_all_tasks_blocked()
        await rt.tell("life", Note(sender="s", n=2))
    assert 1 == len(outcome)
    assert ["start", "stop"] == events
    assert [2] == [d.envelope.payload.n for d in rt.dead_letters]


async def test_stopping_an_actor_fails_its_pending_asks() -> None:
    """`stop` makes in-flight asks raise ActorDeadError, and later tells too."""
    never = anyio.Event()
    outcome: list[BaseException] = []
    async with Runtime.open() as rt:
        await rt.spawn("life", Lifecycle, [], never)

        async def asker() -> None:
            try:
                await rt.ask("life", Note(sender="s", n=1), timeout=None)
            except ActorDeadError as exc:
                outcome.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(asker)
            await wait_all_tasks_blocked()
            await rt.stop("life", timeout=0)
        assert 1 == len(outcome)
        assert not rt.is_alive("life")
        with pytest.raises(ActorDeadError):
            await rt.tell("life", Note(sender="s", n=2))


async def test_wait_stopped_returns_when_the_actor_stops() -> None:
    """A waiter on `wait_stopped` stays blocked while the actor lives, and wakes at its stop."""
    woke: list[bool] = []
    async with Runtime.open() as rt:
        await rt.spawn("greeter", Greeter)

        async def waiter() -> None:
            await rt.wait_stopped("greeter")
            woke.append(rt.is_alive("greeter"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            await wait_all_tasks_blocked()
            assert [] == woke
            await rt.stop("greeter")
        assert [False] == woke
        await rt.wait_stopped("greeter")  # already stopped: returns at once
        with pytest.raises(UnknownActorError):
            await rt.wait_stopped("nobody")


async def test_status_reports_each_actor() -> None:
    """`status` lists every actor with its type, state and counters."""
    async with Runtime.open() as rt:
        await rt.spawn("greeter", Greeter)
        await rt.ask("greeter", Hello(name="a"))
        (status,) = rt.status()
        assert ("greeter", "Greeter", "running", 1, 0) == (
            status.name,
            status.actor_type,
            status.state,
            status.handled,
            status.mailbox_depth,
        )


async def test_message_types_resolve_by_name_for_json_input() -> None:
    """`message_type` finds a handled type by name and refuses unknown names clearly."""
    async with Runtime.open() as rt:
        await rt.spawn("greeter", Greeter)
        assert Hello is rt.message_type("greeter", "Hello")
        with pytest.raises(InvalidMessageError, match="accepts: Hello"):
            rt.message_type("greeter", "Nope")


async def test_the_supervision_cooldown_comes_from_baton_toml(tmp_path: Path) -> None:
    """`[runtime.supervision] cooldown` sets how long a spent restart budget keeps an actor
    down; it defaults to 60 s and refuses a negative value naming the key."""
    (tmp_path / "baton.toml").write_text("[runtime]\nmailbox = 'memory'\n")
    async with Runtime.open(tmp_path) as rt:
        assert 60.0 == rt.policy.cooldown
    (tmp_path / "baton.toml").write_text(
        "[runtime]\nmailbox = 'memory'\n[runtime.supervision]\ncooldown = 5\n"
    )
    async with Runtime.open(tmp_path) as rt:
        assert 5.0 == rt.policy.cooldown
    (tmp_path / "baton.toml").write_text("[runtime.supervision]\ncooldown = -1\n")
    with pytest.raises(ConfigError, match=r"runtime\.supervision\.cooldown"):
        async with Runtime.open(tmp_path):
            pass


class Relay(Actor):
    """Passes each note on to `to`, recording what became of the tell."""

    def __init__(self, to: str, outcomes: list[str]) -> None:
        self.to = to
        self.outcomes = outcomes

    @handler
    async def note(self, message: Note) -> None:
        try:
            await self.actor_ref.peer(self.to).tell(message)
        except UnknownActorError:
            self.outcomes.append("unknown")
        else:
            self.outcomes.append("sent")


class Keeper(Actor):
    def __init__(self, kept: list[str]) -> None:
        self.kept = kept

    @handler
    async def note(self, message: Note) -> None:
        self.kept.append(message.sender)


async def test_actors_started_together_handle_nothing_until_all_are_registered() -> None:
    """A message already waiting for the first actor of the block (as one left by a previous
    run is) is handled only once the actor it tells is there too."""
    outcomes: list[str] = []
    kept: list[str] = []
    async with Runtime.open() as rt:
        async with rt.starting_together():
            await rt.spawn("relay", Relay, "keeper", outcomes)
            await rt.tell("relay", Note(sender="early", n=1))
            await wait_all_tasks_blocked()
            assert [] == outcomes  # without the gate: ["unknown"], the note lost
            await rt.spawn("keeper", Keeper, kept)
        with anyio.fail_after(5):
            while not kept:
                await checkpoint()
    assert (["sent"], ["early"]) == (outcomes, kept)


async def test_starting_together_blocks_do_not_nest() -> None:
    """A block inside a block would release the outer one's actors early: refused."""
    async with Runtime.open() as rt, rt.starting_together():
        with pytest.raises(UsageError, match="do not nest"):
            async with rt.starting_together():
                pass
