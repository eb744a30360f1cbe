"""The toolbox: dispatch by name, every failure an is_error result, concurrent calls in order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from baton.agents.tools import Read, Sandbox, Toolbox, ToolOutcome
from baton.context.payload import ToolUseBlock
from baton.errors import UsageError


class TextInput(BaseModel):
    text: str = ""


class Echo:
    name = "echo"
    description = "Return the text."
    input_model = TextInput
    input_schema: dict[str, Any] = TextInput.model_json_schema()

    async def run(self, args: TextInput) -> ToolOutcome:
        return ToolOutcome(f"echo: {args.text}")


class Hang:
    """Waits for an event nobody sets: only its timeout ends it."""

    name = "hang"
    description = "Never returns."
    input_model = TextInput
    input_schema: dict[str, Any] = TextInput.model_json_schema()

    async def run(self, args: TextInput) -> ToolOutcome:
        await anyio.Event().wait()
        return ToolOutcome("unreachable")


class Gate:
    """`wait` returns once `open` has run: both finish only if they run concurrently."""

    description = "A rendezvous."
    input_model = TextInput
    input_schema: dict[str, Any] = TextInput.model_json_schema()

    def __init__(self, name: str, event: anyio.Event) -> None:
        self.name = name
        self._event = event

    async def run(self, args: TextInput) -> ToolOutcome:
        if self.name == "open":
            self._event.set()
        else:
            await self._event.wait()
        return ToolOutcome(f"{self.name} done")


class Broken:
    name = "broken"
    description = "Raises."
    input_model = TextInput
    input_schema: dict[str, Any] = TextInput.model_json_schema()

    async def run(self, args: TextInput) -> ToolOutcome:
        if args.text == "os":
            raise FileNotFoundError(2, "No such file or directory", "gone.txt")
        raise KeyError("bug")


def use(name: str, text: str = "", *, id_: str | None = None) -> ToolUseBlock:
    return {
        "type": "tool_use",
        "id": id_ or f"id_{name}_{text}",
        "name": name,
        "input": {"text": text},
    }


async def test_an_unknown_tool_is_an_error_listing_the_known_ones() -> None:
    """Calling a tool that does not exist answers is_error with the available names."""
    outcome = await Toolbox([Echo()]).run(use("Erase"))
    assert ToolOutcome("there is no tool named 'Erase'; available: echo", is_error=True) == outcome


async def test_invalid_input_names_the_field(tmp_path: Path) -> None:
    """Input that fails the tool's model is an is_error result naming the field and the fix."""
    box = Toolbox([Read(Sandbox(tmp_path))])
    outcome = await box.run(
        {"type": "tool_use", "id": "t", "name": "Read", "input": {"path": "a", "limit": 0}}
    )
    assert outcome.is_error
    assert (
        "invalid input for Read; fix these fields and call it again:\n"
        "- limit: Input should be greater than or equal to 1 (got 0)"
    ) == outcome.content


async def test_exceptions_inside_a_tool_become_error_results() -> None:
    """An OSError and an unexpected exception both come back as is_error, never raised."""
    box = Toolbox([Broken()])
    os_error, bug = await box.run_all([use("broken", "os"), use("broken", "bug")])
    assert os_error.is_error
    assert "No such file or directory: gone.txt" in os_error.content
    assert bug.is_error
    assert "broken failed unexpectedly (KeyError: 'bug')" in bug.content


async def test_calls_run_concurrently_and_results_keep_block_order() -> None:
    """A call waiting on a later one finishes, and outcomes follow the order of the blocks."""
    event = anyio.Event()
    box = Toolbox([Gate("wait", event), Gate("open", event), Echo()], timeout=10)
    with anyio.fail_after(10):
        outcomes = await box.run_all([use("wait"), use("echo", "x"), use("open")])
    assert ["wait done", "echo: x", "open done"] == [o.content for o in outcomes]


async def test_a_hanging_tool_times_out_without_holding_up_the_others() -> None:
    """The hung call ends as a timeout error; the calls beside it return their results."""
    box = Toolbox([Hang(), Echo()], timeout=10, timeouts={"hang": 0.01})
    with anyio.fail_after(10):
        results = await box.results([use("echo", "a"), use("hang"), use("echo", "b")])
    assert ["id_echo_a", "id_hang_", "id_echo_b"] == [r["tool_use_id"] for r in results]
    assert ["echo: a", "echo: b"] == [results[0]["content"], results[2]["content"]]
    assert results[1].get("is_error") is True
    assert "hang did not finish within 0.01s" in str(results[1]["content"])
    assert "is_error" not in results[0]


async def test_cancellation_from_outside_is_not_turned_into_a_result() -> None:
    """Cancelling the caller cancels the calls; the toolbox does not swallow it."""
    box = Toolbox([Hang()], timeout=10)
    with anyio.move_on_after(0.01) as scope:
        await box.run_all([use("hang")])
    assert scope.cancelled_caught


def test_specs_render_each_tool_for_the_messages_api() -> None:
    """specs() gives name, description and input schema per tool, in the order given."""
    assert [
        {"name": "echo", "description": "Return the text.", "input_schema": Echo.input_schema},
        {"name": "hang", "description": "Never returns.", "input_schema": Hang.input_schema},
    ] == Toolbox([Echo(), Hang()]).specs()


def test_two_tools_with_one_name_are_refused() -> None:
    """A toolbox cannot hold two tools under the same name."""
    with pytest.raises(UsageError, match="two tools are named 'echo'"):
        Toolbox([Echo(), Echo()])
