"""`AgentContext`: the brief the Scheduler builds for every dispatch (docs/handoffs.md,
"AgentContext").

The receiving agent reads it first, rendered as text at the top of its round; what the agent
finds comes back through `merge_findings`, so the next agent dispatched sees it. The context
is immutable: merging returns a new one, so a context already sent in a message never changes
under its receiver.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# A rendered value longer than this is cut to head + tail: the context is a brief, and the
# agent can read the full finding from disk when it is a path.
_MAX_VALUE_CHARS = 600


def _compact(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}[... {len(text) - 2 * half} chars omitted ...]{text[-half:]}"


def _merge(current: Any, incoming: Any) -> Any:
    # Dicts merge key by key and lists gain the items they lack, so one agent's finding never
    # erases another's; any other value is replaced by the newer one.
    if isinstance(current, Mapping) and isinstance(incoming, Mapping):
        merged = dict(current)
        for key, value in incoming.items():
            merged[key] = _merge(merged[key], value) if key in merged else value
        return merged
    if isinstance(current, list) and isinstance(incoming, list):
        return current + [item for item in incoming if item not in current]
    return incoming


class AgentContext(BaseModel):
    """What an agent is asked to do now, what led here, and what the other agents found."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_summary: str = Field(min_length=1, description="the refined task for this dispatch")
    relevant_history: list[dict[str, Any]] = Field(
        default_factory=list, description="past events that bear on this task, oldest first"
    )
    shared_findings: dict[str, Any] = Field(
        default_factory=dict, description="what other agents found, usually keyed by agent"
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="dispatch details: source agent, priority, scenario"
    )
    # Absent from contexts saved before long-term memory existed: they load as empty.
    recalled_memory: str = Field(
        "",
        description="entries recalled from long-term memory for this task (earlier "
        "iterations' and runs' findings), already cut to the memory budget",
    )

    def merge_findings(
        self, findings: Mapping[str, Any], *, source: str | None = None
    ) -> AgentContext:
        """A copy with `findings` merged into `shared_findings` (under `source`, if given).

        Nested dicts merge key by key, lists gain the items they lack, and other values are
        replaced, so findings from several agents and rounds accumulate.
        """
        incoming: Mapping[str, Any] = {source: dict(findings)} if source else findings
        merged = _merge(self.shared_findings, incoming)
        return self.model_copy(update={"shared_findings": merged})

    def render(self, *, max_value_chars: int = _MAX_VALUE_CHARS) -> str:
        """The context as compact Markdown for the top of the receiving agent's prompt.

        Empty sections are left out; each history entry and finding takes one line, cut to
        head and tail past `max_value_chars`.
        """
        parts = ["# Task context", self.task_summary.strip()]
        if self.relevant_history:
            parts.append("## Relevant history")
            parts.extend(f"- {_compact(entry, max_value_chars)}" for entry in self.relevant_history)
        if self.shared_findings:
            parts.append("## Shared findings")
            parts.extend(
                f"- {key}: {_compact(value, max_value_chars)}"
                for key, value in self.shared_findings.items()
            )
        if self.recalled_memory.strip():
            # Already within the memory budget: rendered whole, not cut per value.
            parts.append("## Recalled from long-term memory")
            parts.append(self.recalled_memory.strip())
        if self.metadata:
            parts.append("## Dispatch")
            parts.append(
                " · ".join(f"{k}: {_compact(v, max_value_chars)}" for k, v in self.metadata.items())
            )
        return "\n".join(parts)
