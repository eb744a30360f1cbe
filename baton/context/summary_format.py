"""Compaction summaries: the compact prompt, what a summary schema is, the generic schema,
and finding and validating a summary in a model's answer (docs/context.md, "Compaction" and
"Summary schemas"; an agent's own schema is handed to its strategy).

The model answers the prompt with one JSON object; `parse_summary` finds it (bare, fenced,
or inside `<compact_summary>` tags, the form the context shows it in) and validates it
against the agent's schema. Top-level sections are required, their inner fields default to
empty so a summary written before anything happened ("received the input, about to start")
is valid.
Extra keys are kept: a model that adds a useful section loses nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from baton.context.errors import SummaryFailure
from baton.errors import validation_problems

COMPACT_PROMPT = """请对当前工作进行总结，保留以下关键信息：
- 当前场景设计/生成组件的核心要点
- Execute Agent反馈的主要问题/评测进度
- 已完成的分析结论/已识别的问题
- 待办事项清单
- 关键路径（execution_output_dir等）

总结格式使用JSON，确保信息完整但简洁。"""
"""The compact prompt: the user message appended to the turn payload to ask for the summary."""

SUMMARY_TAG = "compact_summary"


class SummarySection(BaseModel):
    """A section of a summary schema: its fields default to empty, extra keys are kept."""

    model_config = ConfigDict(extra="allow")


class SummaryBase(BaseModel):
    """What every summary schema shares: key paths (and key ids, from the ledger)."""

    model_config = ConfigDict(extra="allow")

    agent: ClassVar[str] = "generic"
    pending_field: ClassVar[str] = "pending_actions"

    key_paths: dict[str, str]
    key_ids: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def empty(cls) -> dict[str, Any]:
        """A skeleton that validates: every required section, each empty."""
        return {"key_paths": {}}

    def pending(self) -> list[str]:
        """The open items, whatever the schema calls them."""
        value = getattr(self, self.pending_field, [])
        return list(value) if isinstance(value, list) else []


class GenericSummary(SummaryBase):
    """Any other agent: objectives, technical context, milestones, decisions, pending items
    and key paths (docs/context.md, "Summary schemas")."""

    objectives_and_status: str
    technical_context: list[str]
    completed_milestones: list[str]
    key_insights_and_decisions: list[str]
    pending_actions: list[str]

    @classmethod
    def empty(cls) -> dict[str, Any]:
        """A valid generic summary with nothing in it."""
        return {
            "objectives_and_status": "",
            "technical_context": [],
            "completed_milestones": [],
            "key_insights_and_decisions": [],
            "pending_actions": [],
            "key_paths": {},
        }


_FENCE_OPEN = re.compile(r"```(?:json)?\s*+(?=\{)")
_FENCE_CLOSE = re.compile(r"\}\s*+```")


def _tagged(text: str) -> str | None:
    # Found with `str.find`, not a lazy pattern: a model's answer full of opening tags made
    # each one scan to the end (docs/context.md, "Summary schemas").
    opening, closing = f"<{SUMMARY_TAG}>", f"</{SUMMARY_TAG}>"
    start = text.find(opening)
    end = text.find(closing, start + len(opening)) if start != -1 else -1
    return None if end == -1 else text[start + len(opening) : end].strip()


def _fenced(text: str) -> str | None:
    # The first fence that opens on `{`, to the last `}` closing a fence after it.
    opening = _FENCE_OPEN.search(text)
    if opening is None:
        return None
    closings = [m.start() for m in _FENCE_CLOSE.finditer(text, opening.end())]
    return text[opening.end() : closings[-1] + 1] if closings else None


def extract_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a model's answer; `SummaryFailure` when there is none."""
    candidates = [c for c in (_tagged(text), _fenced(text)) if c is not None]
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise SummaryFailure("the summary holds no JSON object; the fallback summary is used instead")


def parse_summary(text: str, schema: type[SummaryBase]) -> SummaryBase:
    """Validate a model's summary against `schema`; `SummaryFailure` says what is wrong."""
    data = extract_json_object(text)
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(validation_problems(exc, show_input=False))
        raise SummaryFailure(
            f"the summary does not match the {schema.agent} schema ({problems}); "
            "the fallback summary is used instead"
        ) from None


def summary_json(summary: SummaryBase | Mapping[str, Any]) -> str:
    """The summary as compact JSON (CJK kept readable), the form carried in the context."""
    data = summary.model_dump(mode="json") if isinstance(summary, BaseModel) else dict(summary)
    return json.dumps(data, ensure_ascii=False)


def render_summary(summary_json_text: str) -> str:
    """The summary as the context shows it, inside `<compact_summary>` tags."""
    return f"<{SUMMARY_TAG}>\n{summary_json_text}\n</{SUMMARY_TAG}>"
