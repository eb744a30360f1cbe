"""Builders and fakes shared by the context-engine tests."""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.lowlevel import checkpoint

from baton.context.conversation import Conversation
from baton.context.payload import Payload, ToolSpec
from baton.context.records import StepAppended
from baton.context.summary_format import SummaryBase
from baton.context.validation import validate_request

SYSTEM = "You are the Init Agent. Design scenarios; keep every path you use."
TOOLS: list[ToolSpec] = [
    {
        "name": "Read",
        "description": "Read a workspace file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
    {
        "name": "Write",
        "description": "Write a workspace file atomically.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
]

_ids = itertools.count()


def tool_step(
    conversation: Conversation,
    *,
    tools: int = 1,
    text: str = "Let me look.",
    result_chars: int = 100,
    result_text: str | None = None,
    usage: dict[str, int] | None = None,
    tool_name: str = "Read",
    path: str | None = None,
) -> StepAppended:
    """Append a step with `tools` tool calls (0: a final answer) and their results."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    results = []
    for _ in range(tools):
        n = next(_ids)
        content.append(
            {
                "type": "tool_use",
                "id": f"toolu_{n}",
                "name": tool_name,
                "input": {"path": path or f"scenarios/demo/file_{n}.json"},
            }
        )
        body = result_text if result_text is not None else ("r" * result_chars)
        results.append({"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": body})
    return conversation.append_step(content, results, usage)


def assert_valid(payload: Payload) -> None:
    """The payload passes the Messages API checker (strict alternation, no model)."""
    problems = validate_request(payload, require_model=False, strict_alternation=True)
    assert [] == problems, (problems, payload["messages"])


def summary_text(schema: type[SummaryBase], **extra: Any) -> str:
    """A valid summary of `schema` as a model would write it, wrapped in prose."""
    data = {**schema.empty(), **extra}
    body = json.dumps(data, ensure_ascii=False)
    return f"Here is the summary.\n<compact_summary>{body}</compact_summary>"


Summarize = Callable[[Payload], Awaitable[str]]


def fixed_summarizer(text: str, seen: list[Payload] | None = None) -> Summarize:
    """A summarizer answering `text`, recording the payloads it was given."""

    async def summarize(payload: Payload) -> str:
        if seen is not None:
            seen.append(payload)
        return text

    return summarize


async def hanging_summarizer(payload: Payload) -> str:
    """A summarizer that never answers."""
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


class ManualClock:
    """A clock that only moves when the test says so; `sleep` waits for `advance`."""

    def __init__(self) -> None:
        self.time = 0.0
        self._moved = anyio.Event()
        self.sleepers = 0

    def now(self) -> float:
        return self.time

    async def sleep(self, seconds: float) -> None:
        deadline = self.time + seconds
        self.sleepers += 1
        try:
            while self.time < deadline:
                await self._moved.wait()
        finally:
            self.sleepers -= 1

    def advance(self, seconds: float) -> None:
        self.time += seconds
        moved, self._moved = self._moved, anyio.Event()
        moved.set()


class InstantClock:
    """A clock whose sleeps end at the next scheduling point, advancing time by their length."""

    def __init__(self) -> None:
        self.time = 0.0

    def now(self) -> float:
        return self.time

    async def sleep(self, seconds: float) -> None:
        await checkpoint()
        self.time += seconds
