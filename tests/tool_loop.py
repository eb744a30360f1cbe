"""A stand-in policy that drives an agent through a long tool loop, for the thinking tests."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from baton.context.summary_format import COMPACT_PROMPT, SUMMARY_TAG
from baton.models.scripted import ScriptedResponse
from baton.pipeline.summaries import summary_schema_for

FINAL_ANSWER = "All parts read."


def last_user_texts(body: Mapping[str, Any]) -> list[str]:
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return [content]
    return [block.get("text", "") for block in content if block.get("type") == "text"]


class ToolLoop:
    """Replies `steps` times with a Read of the next path, then a final answer; a request
    for a compaction summary (the compact prompt at the end) gets a valid summary instead."""

    def __init__(self, steps: int, paths: Sequence[str], role: str = "init") -> None:
        self.steps = steps
        self.paths = list(paths)
        self.turns = 0
        self.summaries = 0
        self._summary = json.dumps(summary_schema_for(role).empty(), ensure_ascii=False)

    @property
    def finished(self) -> bool:
        """Whether the final answer has been given."""
        return self.turns > self.steps

    def __call__(self, body: Mapping[str, Any]) -> ScriptedResponse:
        if any(COMPACT_PROMPT in text for text in last_user_texts(body)):
            self.summaries += 1
            text = f"Summary follows.\n<{SUMMARY_TAG}>{self._summary}</{SUMMARY_TAG}>"
            return ScriptedResponse.model_validate(text)
        n = self.turns
        self.turns += 1
        if n >= self.steps:
            return ScriptedResponse.model_validate(FINAL_ANSWER)
        path = self.paths[n % len(self.paths)]
        return ScriptedResponse.model_validate(
            {"text": f"Reading part {n}.", "tool_use": {"name": "Read", "input": {"path": path}}}
        )


def continuations(requests: Sequence[Any]) -> list[list[dict[str, Any]]]:
    """For each request that answers tool calls, the assistant message it sends back."""
    found = []
    for request in requests:
        messages = request.body["messages"]
        last = messages[-1]["content"]
        if isinstance(last, list) and last and last[0].get("type") == "tool_result":
            found.append(messages[-2]["content"])
    return found
