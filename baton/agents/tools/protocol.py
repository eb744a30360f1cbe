"""The `Tool` protocol: a name, a description, a pydantic input model, and `run`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from baton.context.payload import ToolResultBlock, ToolSpec

InputT = TypeVar("InputT", bound=BaseModel)

# The Messages API refuses an empty text block; an outcome with nothing to say says this.
_NO_OUTPUT = "(no output)"


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call produced: the text the model sees, and whether it is an error."""

    content: str
    is_error: bool = False

    def to_block(self, tool_use_id: str) -> ToolResultBlock:
        """The `tool_result` block answering the `tool_use` block with this id."""
        block: ToolResultBlock = {
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": self.content or _NO_OUTPUT,
        }
        if self.is_error:
            block["is_error"] = True
        return block


class Tool(Protocol[InputT]):
    """A tool an agent can call; `Toolbox` validates the input before `run` sees it.

    `run` may raise: the toolbox turns any exception into an `is_error` outcome. Return an
    `is_error` outcome directly when a message written for the model says it better.
    """

    @property
    def name(self) -> str:
        """The name the model calls the tool by."""
        ...

    @property
    def description(self) -> str:
        """What the tool does and when to use it, written for the model."""
        ...

    @property
    def input_model(self) -> type[InputT]:
        """The pydantic model the raw `tool_use` input is validated with."""
        ...

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON schema the model sees (usually `input_model.model_json_schema()`)."""
        ...

    async def run(self, args: InputT) -> ToolOutcome:
        """Carry out one validated call."""
        ...


def tool_spec(tool: Tool[Any]) -> ToolSpec:
    """The tool as the Messages API's `tools` entry describes it."""
    return {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}
