"""The memory tools: Remember tags by scenario and role, Recall stays in the scenario, Forget
only the scenario's own entries, and every bad call is a tool error, never a crash."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from baton.agents.tools import Toolbox, ToolOutcome, scenario_scope
from baton.agents.tools.memory import MAX_CONTENT_CHARS, memory_tools, scenario_tag
from baton.context.payload import ToolUseBlock
from baton.memory import MemorySource, MemoryStore, open_memory


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[MemoryStore]:
    async with await open_memory(tmp_path) as opened:
        yield opened


def use(name: str, **arguments: Any) -> ToolUseBlock:
    return {"type": "tool_use", "id": "toolu_1", "name": name, "input": arguments}


async def call(
    store: MemoryStore, name: str, *, scenario: str | None = "leave", **arguments: Any
) -> ToolOutcome:
    toolbox = Toolbox(memory_tools(store, "init", recall_limit=5))
    with (
        scenario_scope(scenario),
        structlog.contextvars.bound_contextvars(conversation=f"{scenario}@2"),
    ):
        return await toolbox.run(use(name, **arguments))


async def test_remember_tags_the_scenario_base_name_and_the_role(store: MemoryStore) -> None:
    """An entry gets `scenario:<name>` and `role:<agent>` before the model's own tags, and
    records the agent and conversation it came from."""
    outcome = await call(store, "Remember", content="dates need ISO 8601", tags=["topic:dates"])
    assert not outcome.is_error
    [entry] = await store.list()
    assert ("scenario:leave", "role:init", "topic:dates") == entry.tags
    assert MemorySource(agent="init", conversation="leave@2") == entry.source
    assert f"remembered {entry.id}" in outcome.content


def test_a_later_run_shares_the_scenario_tag() -> None:
    """`name@3` is filed under the same tag as `name`: every run shares the memory."""
    assert "scenario:leave" == scenario_tag("leave@3") == scenario_tag("leave")


async def test_recall_searches_the_scenario_unless_asked_for_all(store: MemoryStore) -> None:
    """Another scenario's entry is not recalled by default, and is with scope='all'."""
    await store.remember("balance checks fail on weekends", tags=[scenario_tag("other")])
    await call(store, "Remember", content="balance checks need the leave type")
    mine = await call(store, "Recall", query="balance checks")
    everything = await call(store, "Recall", query="balance checks", scope="all")
    assert "leave type" in mine.content
    assert "weekends" not in mine.content
    assert "weekends" in everything.content


async def test_recall_says_so_when_nothing_matches(store: MemoryStore) -> None:
    """An empty recall is an answer with a hint, not an error."""
    outcome = await call(store, "Recall", query="nothing stored")
    assert (False, True) == (outcome.is_error, outcome.content.startswith("nothing in long-term"))


@pytest.mark.parametrize(
    ("arguments", "complaint"),
    [
        ({"content": ""}, "content"),
        ({"content": "   \n"}, "blank"),
        ({"content": "x" * (MAX_CONTENT_CHARS + 1)}, "content"),
        ({"content": "ok", "tags": ["scenario:other"]}, "set by the runtime"),
        ({"content": "ok", "tags": ["has space"]}, "tags"),
        ({"content": "ok", "surprise": 1}, "surprise"),
    ],
)
async def test_bad_remember_calls_are_tool_errors(
    store: MemoryStore, arguments: dict[str, Any], complaint: str
) -> None:
    """Empty, blank or oversized content, reserved or malformed tags, unknown fields: an
    error result naming the problem, and nothing stored."""
    outcome = await call(store, "Remember", **arguments)
    assert (True, True) == (outcome.is_error, complaint in outcome.content)
    assert [] == await store.list()


@pytest.mark.parametrize(
    "arguments", [{"query": ""}, {"query": "  "}, {"query": "x", "limit": 0}, {"limit": 3}]
)
async def test_bad_recall_calls_are_tool_errors(
    store: MemoryStore, arguments: dict[str, Any]
) -> None:
    """A missing or blank query, or a limit below one, is an error result."""
    assert (await call(store, "Recall", **arguments)).is_error


async def test_forget_removes_the_scenarios_own_entry(store: MemoryStore) -> None:
    """Forget by id removes the entry and says which."""
    entry = await store.remember("stale finding", tags=[scenario_tag("leave")])
    outcome = await call(store, "Forget", id=entry.id)
    assert (False, f"forgot {entry.id}") == (outcome.is_error, outcome.content)
    assert [] == await store.list()


async def test_forget_refuses_unknown_ids_and_other_scenarios_entries(
    store: MemoryStore,
) -> None:
    """An unknown id and another scenario's entry are both error results; nothing is lost."""
    other = await store.remember("not yours", tags=[scenario_tag("other")])
    unknown = await call(store, "Forget", id="m-000000000000")
    foreign = await call(store, "Forget", id=other.id)
    assert (True, True) == (unknown.is_error, foreign.is_error)
    assert [other.id] == [entry.id for entry in await store.list()]


async def test_without_a_scenario_forget_reaches_any_entry(store: MemoryStore) -> None:
    """The `main` conversation belongs to no scenario: it manages every entry."""
    other = await store.remember("any entry", tags=[scenario_tag("other")])
    outcome = await call(store, "Forget", scenario=None, id=other.id)
    assert not outcome.is_error
    assert [] == await store.list()
