"""Agent tools: the `Tool` protocol, the `Toolbox`, the sandbox and the file tools."""

from baton.agents.tools._sandbox import Sandbox, scenario_scope
from baton.agents.tools.files import (
    List,
    ListInput,
    Read,
    ReadInput,
    Write,
    WriteInput,
    file_tools,
)
from baton.agents.tools.protocol import Tool, ToolOutcome, tool_spec
from baton.agents.tools.toolbox import Toolbox

__all__ = [
    "List",
    "ListInput",
    "Read",
    "ReadInput",
    "Sandbox",
    "Tool",
    "ToolOutcome",
    "Toolbox",
    "Write",
    "WriteInput",
    "file_tools",
    "scenario_scope",
    "tool_spec",
]
