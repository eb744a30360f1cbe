"""The load budget: how much a round may `Read` before further reads are refused unrun
(docs/handoffs.md, "Loading on demand")."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from baton.agents.tools.toolbox import Toolbox, ToolObserver
from baton.context.payload import ToolResultBlock, ToolUseBlock
from baton.context.tokens import estimate_json_tokens

READ = "Read"


async def run_within_budget(
    toolbox: Toolbox,
    uses: Sequence[ToolUseBlock],
    *,
    loaded: int,
    budget: int,
    observe: ToolObserver | None = None,
) -> tuple[list[ToolResultBlock], int]:
    """Run a step's tools; once `loaded` tokens of files reach `budget`, its `Read`s are
    refused unrun. The results in call order, and the tokens loaded after this step.
    `observe` wraps each call that runs (see `Toolbox.run_all`)."""
    refused: dict[str, ToolResultBlock] = {}
    if loaded >= budget:
        for use in uses:
            if use["name"] == READ:
                refused[use["id"]] = {
                    "type": "tool_result",
                    "tool_use_id": use["id"],
                    "is_error": True,
                    "content": (
                        f"load budget used up: this round has loaded {loaded} tokens of files "
                        f"(budget {budget}). Work from what you have read, or finish the round "
                        "and read a narrower range (offset/limit, head_tail) in the next one."
                    ),
                }
    run = [use for use in uses if use["id"] not in refused]
    done = {r["tool_use_id"]: r for r in await toolbox.results(run, observe=observe)}
    loaded += loaded_by(run, done.values())
    return [refused.get(use["id"]) or done[use["id"]] for use in uses], loaded


def loaded_by(uses: Iterable[Mapping[str, Any]], results: Iterable[Mapping[str, Any]]) -> int:
    """The tokens of files a step's `Read`s loaded (refused and failed reads load none): what
    counts against the round's budget, live and when a journal is read back."""
    reads = {use.get("id") for use in uses if use.get("name") == READ}
    return sum(
        estimate_json_tokens(result.get("content", ""))
        for result in results
        if result.get("tool_use_id") in reads and not result.get("is_error")
    )
