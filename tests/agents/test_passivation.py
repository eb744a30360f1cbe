"""Idle conversations leave memory and come back from the journal as they were."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from baton import Runtime
from baton.agents._agent_state import ConversationBook, passivatable
from baton.agents._passivation import Passivation
from baton.agents.agent import AgentActor
from baton.agents.compaction import BackgroundSummary
from baton.agents.journal import FileJournalStore
from baton.agents.messages import MAIN, Prompt
from baton.pipeline.roles import InitActor, agent_setup
from baton.testing import capture_token_log
from tests.agents.test_agent import config, read, scripted, write

DEADLINE_S = 10.0


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def passivation(
    after: float, clock: Clock, refused: set[str] | None = None
) -> tuple[Passivation, list[str]]:
    dropped: list[str] = []

    def drop(conversation: str) -> bool:
        if conversation in (refused or set()):
            return False
        dropped.append(conversation)
        return True

    return Passivation(after, drop, owner=lambda: "init", clock=clock), dropped


def test_only_conversations_idle_long_enough_are_dropped() -> None:
    """A sweep drops the conversations idle for `after` seconds, oldest first, and no other."""
    clock = Clock()
    idle, dropped = passivation(10, clock)
    idle.touched("a")
    clock.now += 5
    idle.touched("b")
    clock.now += 5
    assert 1 == idle.sweep()
    assert ["a"] == dropped
    clock.now += 5
    assert 1 == idle.sweep()
    assert ["a", "b"] == dropped


def test_a_held_conversation_is_not_dropped_until_its_last_holder_lets_go() -> None:
    """Nested holds keep a conversation in memory; idle time counts from the last release."""
    clock = Clock()
    idle, dropped = passivation(10, clock)
    idle.held("a")
    idle.held("a")
    idle.released("a", cached=True)
    clock.now += 60
    assert (0, []) == (idle.sweep(), dropped)
    idle.released("a", cached=True)
    clock.now += 9
    assert 0 == idle.sweep()
    clock.now += 1
    assert (1, ["a"]) == (idle.sweep(), dropped)


def test_a_conversation_that_cannot_be_dropped_yet_is_tried_again_later() -> None:
    """A refused drop leaves the conversation idle from the sweep's time on."""
    clock = Clock()
    idle, _ = passivation(10, clock, refused={"a"})
    idle.touched("a")
    clock.now += 10
    assert (0, 1) == (idle.sweep(), idle.idle)
    clock.now += 9
    assert 0 == idle.sweep()


def test_no_passivation_when_it_is_off() -> None:
    """`passivate_after_s = 0` keeps every conversation in memory."""
    clock = Clock()
    idle, dropped = passivation(0, clock)
    idle.touched("a")
    clock.now += 10_000
    assert (0, []) == (idle.sweep(), dropped)


def test_a_summary_that_came_back_without_text_keeps_its_conversation_in_memory(
    tmp_path: Path,
) -> None:
    """The journal cannot rebuild a background summary that failed: not passivatable."""
    book = ConversationBook(
        journal=FileJournalStore(tmp_path),
        owner=lambda: "init",
        load=lambda c, r: None,  # type: ignore[arg-type, return-value]
    )
    job = BackgroundSummary(compaction=0, through_seq=3, turn=4, started=0.0)
    job.answered, job.reason = True, "timed out"
    state: Any = type("State", (), {"background": job})()
    assert not passivatable(state)
    job.text = "the summary"
    assert passivatable(state)
    assert book.passivate("never-loaded")


def on_passivation(agent: AgentActor) -> anyio.Event:
    """Set once the agent's book drops a conversation."""
    dropped, book = anyio.Event(), agent.loop.book
    told = book._dropped

    def tell(conversation: str) -> None:
        told(conversation)
        dropped.set()

    book._dropped = tell
    return dropped


def compacting_model() -> Any:
    return scripted(
        [
            read("big.txt"),
            write("notes.md", "# notes\nbalance rules summarised"),
            read("big.txt"),
            "Round one done.",
            read("notes.md"),
            "Round two done.",
        ]
    )


async def two_rounds(workspace: Path, passivate_after_s: float) -> tuple[list[Any], list[Any]]:
    """Two prompts to `init` (the first compacts), the conversation idle in between; the
    payloads the model was sent, and the token-log lines."""
    big = "\n".join(f"line {n}: leave balance record {'x' * 80}" for n in range(200))
    (workspace / "big.txt").write_text(big)
    model = compacting_model()
    cfg = config(
        context_window=40_000,
        compact_threshold=12_000,
        keep_recent_steps=2,
        passivate_after_s=passivate_after_s,
    )
    async with Runtime.open(workspace) as rt:
        setup = agent_setup(
            "init",
            cfg,
            workspace=workspace,
            model=model,
            journal=FileJournalStore(workspace),
            token_log=rt.token_log,
            write_paths=("notes.md",),
        )
        await rt.spawn("init", InitActor, setup)
        agent = rt._cells["init"].instance
        assert isinstance(agent, AgentActor)
        dropped = on_passivation(agent)
        with capture_token_log() as lines:
            assert "Round one done." == await rt.ask("init", Prompt(text="summarise big.txt"))
            if passivate_after_s:
                with anyio.fail_after(DEADLINE_S):
                    await dropped.wait()
                assert not agent.loop.book.cached(MAIN)
            assert "Round two done." == await rt.ask("init", Prompt(text="and the notes?"))
    return [call.payload for call in model.calls], lines


async def test_a_passivated_conversation_goes_on_as_if_it_had_stayed_in_memory(
    tmp_path: Path,
) -> None:
    """After a compaction and passivation, the next round sends the very requests a
    conversation kept in memory sends, and each reply is journaled and logged once."""
    (tmp_path / "kept").mkdir()
    (tmp_path / "dropped").mkdir()
    kept, _ = await two_rounds(tmp_path / "kept", 0)
    dropped, lines = await two_rounds(tmp_path / "dropped", 0.05)
    assert kept == dropped
    assert 1 <= sum(line["event"] == "context.compacted" for line in lines)
    calls = [(line["purpose"], line["turn"]) for line in lines if line["event"] == "model.call"]
    assert sorted(set(calls)) == sorted(calls)


async def test_conversations_found_idle_at_start_are_not_kept_in_memory(tmp_path: Path) -> None:
    """On start the agent reads every journal for unfinished rounds, and keeps none of the
    finished ones."""
    model = scripted(["Done.", "Done again."])
    setup_args: dict[str, Any] = {"workspace": tmp_path, "model": model}
    for _ in range(2):
        async with Runtime.open(tmp_path) as rt:
            setup = agent_setup(
                "init",
                config(),
                journal=FileJournalStore(tmp_path),
                token_log=rt.token_log,
                **setup_args,
            )
            await rt.spawn("init", InitActor, setup)
            agent = rt._cells["init"].instance
            assert isinstance(agent, AgentActor)
            cached = agent.loop.book.cached(MAIN)
            await rt.ask("init", Prompt(text="go"))
    assert not cached  # the second start found `main` finished
