"""Cutting long tool results to head + tail (docs/context.md, "Tool-result truncation").

A result over `limit` characters keeps its first `head` and last `tail` characters around a
marker that says how much was left out, so the model knows to re-read the file if the middle
matters. The cut is a pure function of the text and the three numbers, which is what lets a
journal replay reproduce it exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

from baton.context.steps import Step, ToolResultContent

TRUNCATE_OVER_CHARS = 5000
TRUNCATE_KEEP_CHARS = 1000


@dataclass(frozen=True, slots=True)
class TruncationSpec:
    """When a result is cut (over `limit` characters) and how much of each end survives."""

    limit: int = TRUNCATE_OVER_CHARS
    head: int = TRUNCATE_KEEP_CHARS
    tail: int = TRUNCATE_KEEP_CHARS


@dataclass(frozen=True, slots=True)
class Truncated:
    """One result that was cut: which call it answered, its length before and after."""

    tool_use_id: str
    original_chars: int
    kept_chars: int


def omitted_marker(count: int) -> str:
    """The marker standing in for the `count` characters that were cut."""
    return f"\n\n[... {count} chars omitted ...]\n\n"


def truncate_text(text: str, spec: TruncationSpec = TruncationSpec()) -> str:
    """`text` itself when within `spec.limit`, else head + marker + tail."""
    if len(text) <= spec.limit or len(text) <= spec.head + spec.tail:
        return text
    omitted = len(text) - spec.head - spec.tail
    tail = text[-spec.tail :] if spec.tail else ""
    return f"{text[: spec.head]}{omitted_marker(omitted)}{tail}"


def needs_truncation(result: ToolResultContent, spec: TruncationSpec) -> bool:
    """Whether `result` is long enough to be cut."""
    text = result.text
    return len(text) > spec.limit and len(text) > spec.head + spec.tail


def truncate_step(
    step: Step, spec: TruncationSpec, only: set[str] | None = None
) -> tuple[Step, list[Truncated]]:
    """The step with its long results cut (all of them, or those whose id is in `only`)."""
    cut: list[Truncated] = []
    results = []
    for result in step.results:
        wanted = only is None or result.tool_use_id in only
        if wanted and needs_truncation(result, spec):
            original = result.text
            text = truncate_text(original, spec)
            cut.append(Truncated(result.tool_use_id, len(original), len(text)))
            results.append(result.model_copy(update={"content": text}))
        else:
            results.append(result)
    if not cut:
        return step, cut
    return step.model_copy(update={"results": results}), cut
