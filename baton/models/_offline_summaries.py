"""Deterministic stand-ins for the summaries an agent asks the model for.

Offline, a compaction request (the compact prompt appended to the turn payload;
docs/context.md, "Compaction") gets a JSON summary in the shape of that agent's schema
(docs/context.md, "Summary schemas"), built from what the payload says: the paths it
mentions, the latest assistant conclusions, the last user request. A task-summary request
gets one plain sentence restating the latest request. Same payload, same summary, so offline
runs and their token logs are reproducible.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

# A relative or absolute path with at least one directory part, e.g. scenarios/a/design.md.
_PATH = re.compile(r"(?<![\w/.-])(?:/?[\w.-]+/)+[\w.-]*[\w-]")
_ITERATION = re.compile(r"iteration_(\d+)")
_OUTPUT_DIR = re.compile(r"^(.*?execution_outputs(?:/iteration_\d+)?)")
_MAX_ITEM_CHARS = 200
_MAX_ITEMS = 5
_MAX_PATHS = 20


def _clip(text: str, limit: int = _MAX_ITEM_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    texts: list[str] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            texts.append(json.dumps(block.get("input", {}), ensure_ascii=False))
        elif block.get("type") == "tool_result":
            texts.extend(_texts(block.get("content", "")))
    return texts


class _Digest:
    """What a summary is built from, read once from the payload."""

    def __init__(self, payload: Mapping[str, Any]) -> None:
        messages = list(payload.get("messages") or ())
        # The last message is the request for the summary itself, not part of the work.
        history = messages[:-1] if len(messages) > 1 else messages
        self.assistant = [
            _clip(t) for m in history if m.get("role") == "assistant" for t in _texts(m["content"])
        ]
        self.user = [
            _clip(t)
            for m in history
            if m.get("role") == "user"
            for t in _user_texts(m["content"])
            if t.strip()
        ]
        corpus = "\n".join(t for m in messages for t in _texts(m.get("content", "")))
        paths: list[str] = []
        for match in _PATH.findall(corpus):
            if match not in paths:
                paths.append(match)
        self.paths = paths[:_MAX_PATHS]
        outputs = [m.group(1) for p in self.paths if (m := _OUTPUT_DIR.match(p))]
        self.execution_output_dir = outputs[-1] if outputs else ""
        iterations = [int(n) for n in _ITERATION.findall(corpus)]
        self.iteration = max(iterations) if iterations else 0

    @property
    def conclusions(self) -> list[str]:
        return [t for t in self.assistant if t.strip()][-_MAX_ITEMS:]

    @property
    def pending(self) -> list[str]:
        return self.user[-1:]

    @property
    def key_paths(self) -> dict[str, str]:
        keyed = {"execution_output_dir": self.execution_output_dir}
        keyed.update({f"path_{i}": path for i, path in enumerate(self.paths)})
        return keyed


def _user_texts(content: Any) -> list[str]:
    # Tool results are what the agent read, not what it was asked; leave them out.
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        str(b.get("text", ""))
        for b in content
        if isinstance(b, Mapping) and b.get("type") == "text"
    ]


def _init_summary(d: _Digest) -> dict[str, Any]:
    return {
        "current_design_summary": {
            "unified_scenario_design": d.user[0] if d.user else "",
            "business_rules_key_points": [],
            "format_specifications": "",
        },
        "execute_feedback_summary": {
            "execution_output_dir": d.execution_output_dir,
            "total_failure_samples": 0,
            "layer1_problems_summary": [],
        },
        "analysis_conclusions": d.conclusions,
        "pending_actions": d.pending,
        "key_paths": d.key_paths,
    }


def _execute_summary(d: _Digest) -> dict[str, Any]:
    return {
        "generated_components": {
            "tools": [p for p in d.paths if "/tools/" in p or p.startswith("tools/")],
            "checkers": [p for p in d.paths if "checker" in p],
            "samples": f"{sum('samples' in p for p in d.paths)} sample paths mentioned",
        },
        "evaluation_progress": {
            "current_iteration": d.iteration,
            "success_rate": "unknown",
            "layer_status": d.conclusions[-1] if d.conclusions else "",
        },
        "identified_issues": {"layer2_problems": [], "layer3_problems": [], "fix_attempts": []},
        "pending_work": d.pending,
        "key_paths": d.key_paths,
    }


def _scheduler_summary(d: _Digest) -> dict[str, Any]:
    return {"scenarios": {}, "pending_actions": d.pending, "key_paths": d.key_paths}


def _generic_summary(d: _Digest) -> dict[str, Any]:
    # The generic schema's sections, for agents without a schema of their own.
    return {
        "objectives_and_status": d.user[0] if d.user else "",
        "technical_context": d.paths,
        "completed_milestones": [],
        "key_insights_and_decisions": d.conclusions,
        "pending_actions": d.pending,
        "key_paths": d.key_paths,
    }


def compaction_summary(payload: Mapping[str, Any], actor: str) -> str:
    """A JSON summary shaped for `actor`: the Init, Execute or Scheduler schema, or the
    generic sections for any other agent (docs/context.md, "Summary schemas")."""
    digest = _Digest(payload)
    name = actor.lower()
    if "init" in name:
        summary = _init_summary(digest)
    elif "execute" in name:
        summary = _execute_summary(digest)
    elif "scheduler" in name:
        summary = _scheduler_summary(digest)
    else:
        summary = _generic_summary(digest)
    return json.dumps(summary, ensure_ascii=False, indent=2)


def task_summary(payload: Mapping[str, Any]) -> str:
    """One sentence restating the payload's latest user request."""
    for message in reversed(list(payload.get("messages") or ())):
        if message.get("role") != "user":
            continue
        texts = [t for t in _user_texts(message.get("content", "")) if t.strip()]
        if texts:
            return "Task: " + _clip(texts[-1], 400)
    return "Task: (no request text found)"
