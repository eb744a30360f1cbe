"""An agent whose journal may not grow (`FileTooLargeFailure`): its round fails once, the
Scheduler hears why (so the scenario ends instead of waiting), and the next round starts
from what the journal holds (README.md, "After a full disk or a damaged file")."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from baton import Actor, Runtime, handler
from baton.agents.agent_config import AgentConfig
from baton.agents.journal import MemoryJournalStore
from baton.agents.messages import Prompt
from baton.errors import FileTooLargeFailure
from baton.models.scripted import Script, ScriptedModel
from baton.pipeline.agent_context import AgentContext
from baton.pipeline.messages import Dispatch, WorkRefused
from baton.pipeline.roles import InitActor, agent_setup

CONFIG = AgentConfig(
    model="claude-opus-4-5",
    context_window=200_000,
    compact_threshold=150_000,
    keep_recent_steps=3,
)


class CappedJournal(MemoryJournalStore):
    """Journals in memory whose appends fail, while `capped`, as a file past its size
    limit does."""

    def __init__(self) -> None:
        super().__init__()
        self.capped = True

    async def append(self, actor: str, conversation: str, record: Mapping[str, Any]) -> None:
        if self.capped:
            raise FileTooLargeFailure(f"{actor}/{conversation}.jsonl", "File too large")
        await super().append(actor, conversation, record)


class Refusals(Actor):
    """Stands in for the Scheduler: keeps the work refusals it is told of."""

    def __init__(self, refused: list[WorkRefused]) -> None:
        self.refused = refused

    @handler
    async def work_refused(self, message: WorkRefused) -> None:
        self.refused.append(message)


async def spawn_init(rt: Runtime, tmp_path: Path, journal: CappedJournal, turns: list[Any]) -> None:
    model = ScriptedModel(Script.model_validate({"actors": {"init": turns}}))
    setup = agent_setup(
        "init", CONFIG, workspace=tmp_path, model=model, journal=journal, token_log=rt.token_log
    )
    await rt.spawn("init", InitActor, setup)


async def test_a_work_order_whose_journal_may_not_grow_ends_its_scenario(tmp_path: Path) -> None:
    """A told work order whose round cannot be journaled is given up once: the Scheduler
    hears a refusal naming FileTooLargeFailure, the order is dead-lettered with it, and the
    agent neither restarts nor waits for room."""
    refused: list[WorkRefused] = []
    order = Dispatch(
        scenario="leave",
        agent_context=AgentContext(task_summary="design it"),
        dispatch_id="leave#1",
    )
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("scheduler", Refusals, refused)
        await spawn_init(rt, tmp_path, CappedJournal(), ["done"])
        await rt.tell("init", order)
        with anyio.fail_after(10):
            await rt.dead_letters.wait_total(1)
            while not refused:
                await anyio.wait_all_tasks_blocked()
        (letter,) = list(rt.dead_letters)
        init = next(status for status in rt.status() if status.name == "init")
    assert [("leave", "init", "leave#1")] == [
        (r.scenario, r.source, r.dispatch_id) for r in refused
    ]
    assert refused[0].reason.startswith("FileTooLargeFailure: init/leave.jsonl cannot grow")
    assert letter.reason.startswith("failed: FileTooLargeFailure: init/leave.jsonl cannot grow")
    assert ("running", 0) == (init.state, init.restarts)


async def test_the_round_after_one_that_could_not_be_journaled_starts_from_the_journal(
    tmp_path: Path,
) -> None:
    """An ask whose round could not be journaled raises FileTooLargeFailure; once the journal
    takes records again, the next round does not finish the unjournaled one first: it is
    answered by the script's first reply, and the journal holds only its own round."""
    journal = CappedJournal()
    async with Runtime.open(tmp_path) as rt:
        await spawn_init(rt, tmp_path, journal, ["first reply", "second reply"])
        with pytest.raises(FileTooLargeFailure):
            await rt.ask("init", Prompt(text="lost round"), timeout=10)
        journal.capped = False
        reply = await rt.ask("init", Prompt(text="kept round"), timeout=10)
    records = await journal.read("init", "main")
    rounds = [record["text"] for record in records if record["type"] == "round"]
    assert ("first reply", ["kept round"]) == (reply, rounds)
