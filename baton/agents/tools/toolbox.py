"""`Toolbox`: dispatches `tool_use` blocks to tools, concurrently, and never raises for them.

Every failure a call can meet (an unknown tool, input that does not validate, a refused path,
an OS error, a timeout, a bug in the tool) becomes an `is_error` outcome whose text says what
went wrong and how to fix the call, so the agent loop carries on and the model corrects itself.
Only cancellation from outside propagates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import anyio
from pydantic import ValidationError

from baton._log import get_logger
from baton.agents.errors import UndeliveredFailure
from baton.agents.tools.protocol import Tool, ToolOutcome, tool_spec
from baton.context.payload import ToolResultBlock, ToolSpec, ToolUseBlock
from baton.errors import BatonError, UsageError, validation_problems

log = get_logger(__name__)

DEFAULT_TIMEOUT = 60.0

ToolObserver = Callable[[ToolUseBlock], AbstractContextManager[Callable[[bool], None]]]
"""Wraps each call a toolbox runs (telemetry's `execute_tool` span, docs/telemetry.md): entered
before the tool runs, and what it yields is told whether the call ended in error."""


def _os_error_text(error: OSError) -> str:
    reason = error.strerror or str(error)
    where = f": {error.filename}" if error.filename else ""
    return f"the operating system refused the call ({reason}{where}); check the path and retry"


class Toolbox:
    """The tools an agent may call, looked up by name.

    Each call runs under its own timeout: `timeouts[name]` if given, else `timeout` seconds.
    """

    def __init__(
        self,
        tools: Iterable[Tool[Any]],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        timeouts: Mapping[str, float] | None = None,
    ) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise UsageError(f"two tools are named {tool.name!r}; tool names must be unique")
            self._tools[tool.name] = tool
        self.timeout = timeout
        self.timeouts = dict(timeouts or {})

    @property
    def names(self) -> list[str]:
        """The tool names, in the order the tools were given."""
        return list(self._tools)

    def names_of(self, kind: type[object]) -> list[str]:
        """The names of the tools that are instances of `kind`."""
        return [name for name, tool in self._tools.items() if isinstance(tool, kind)]

    def specs(self) -> list[ToolSpec]:
        """The `tools` entries of a Messages API request, in the order the tools were given."""
        return [tool_spec(tool) for tool in self._tools.values()]

    async def run(self, block: ToolUseBlock) -> ToolOutcome:
        """Run one `tool_use` block; any failure comes back as an `is_error` outcome."""
        name = block["name"]
        tool = self._tools.get(name)
        if tool is None:
            return self._refuse(
                block, f"there is no tool named {name!r}; available: {', '.join(self._tools)}"
            )
        timeout = self.timeouts.get(name, self.timeout)
        outcome: ToolOutcome | None = None
        try:
            args = tool.input_model.model_validate(block["input"])
            # move_on_after, not fail_after: a TimeoutError the tool raises itself (a socket,
            # say) must not be reported as this deadline.
            with anyio.move_on_after(timeout):
                outcome = await tool.run(args)
        except ValidationError as error:
            problems = "\n".join(f"- {p}" for p in validation_problems(error))
            return self._refuse(
                block,
                f"invalid input for {name}; fix these fields and call it again:\n{problems}",
            )
        except UndeliveredFailure:
            raise  # not the model's doing: the round fails and is retried
        except BatonError as error:
            return self._refuse(block, str(error))
        except OSError as error:
            return self._refuse(block, _os_error_text(error))
        except Exception as error:
            # A bug in a tool must not break the agent loop: it becomes an error result.
            log.exception("tool.crashed", tool=name, tool_use_id=block["id"])
            return self._refuse(
                block, f"{name} failed unexpectedly ({type(error).__name__}: {error}); retry once"
            )
        if outcome is None:
            return self._refuse(
                block,
                f"{name} did not finish within {timeout:g}s and was stopped; "
                "retry with a smaller request (a narrower path, a lower limit)",
            )
        if outcome.is_error:
            log.info("tool.error", tool=name, tool_use_id=block["id"])
        return outcome

    async def run_all(
        self, blocks: Sequence[ToolUseBlock], *, observe: ToolObserver | None = None
    ) -> list[ToolOutcome]:
        """Run the blocks concurrently; outcomes come back in the order of the blocks.
        `observe(block)` is entered around each call and told whether it ended in error."""
        outcomes: list[ToolOutcome | None] = [None] * len(blocks)

        async def run_one(index: int) -> None:
            if observe is None:
                outcomes[index] = await self.run(blocks[index])
                return
            with observe(blocks[index]) as ended:
                outcome = outcomes[index] = await self.run(blocks[index])
                ended(outcome.is_error)

        async with anyio.create_task_group() as group:
            for index in range(len(blocks)):
                group.start_soon(run_one, index)
        done = [o for o in outcomes if o is not None]
        assert len(done) == len(blocks)  # every task stored its outcome before the group closed
        return done

    async def results(
        self, blocks: Sequence[ToolUseBlock], *, observe: ToolObserver | None = None
    ) -> list[ToolResultBlock]:
        """`run_all`, as the `tool_result` blocks that answer `blocks`, in their order."""
        outcomes = await self.run_all(blocks, observe=observe)
        return [o.to_block(b["id"]) for o, b in zip(outcomes, blocks, strict=True)]

    def _refuse(self, block: ToolUseBlock, text: str) -> ToolOutcome:
        log.info("tool.refused", tool=block["name"], tool_use_id=block["id"], reason=text)
        return ToolOutcome(text, is_error=True)
