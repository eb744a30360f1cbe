"""Agent tools: the `Tool` protocol, the `Toolbox`, file tools and handoff tools."""

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
from baton.pipeline.handoff_tools import (
    Clock,
    Deliver,
    HandoffTool,
    RegisterPaths,
    complete_scenario,
    handoff_to_execute,
    return_to_init,
    utc_now,
)

__all__ = [
    "Clock",
    "Deliver",
    "HandoffTool",
    "List",
    "ListInput",
    "Read",
    "ReadInput",
    "RegisterPaths",
    "Sandbox",
    "Tool",
    "ToolOutcome",
    "Toolbox",
    "Write",
    "WriteInput",
    "complete_scenario",
    "file_tools",
    "handoff_to_execute",
    "return_to_init",
    "scenario_scope",
    "tool_spec",
    "utc_now",
]
