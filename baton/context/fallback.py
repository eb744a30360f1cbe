"""The extractive fallback summary: what a compaction carries when the model's summary fails.

Deterministic and model-free: paths, ids and pending items are pulled out of the compacted
text with patterns, merged into the previous summary (when it still validates) and into the
agent's schema, and the key-fact ledger is merged on top. Crude next to an LLM summary, but
it never fails, never waits, and keeps what the agent needs to re-read its files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from baton.context.conversation import Conversation
from baton.context.ledger import KeyFactLedger
from baton.context.steps import Step, TextContent, ToolUseContent
from baton.context.summary_format import SummaryBase, parse_summary
from baton.errors import SummaryFailure

MAX_PATHS = 100
MAX_IDS = 100
MAX_PENDING = 30
_MAX_ITEM_CHARS = 300

_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://\S+")
_PATH = re.compile(r"(?<![\w:/.-])(/?(?:[\w.-]+/)+[\w.-]*\w)")
_FILE = re.compile(
    r"(?<![\w/.-])([\w-]+\.(?:json|jsonl|py|md|txt|yaml|yml|toml|csv|log|html|xml|sql|sh))\b"
)
_ID = re.compile(
    r"\b([A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)*[_-]\d+[A-Za-z0-9]*)\b"
    r"|\b([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b"
)
_PENDING = re.compile(
    r"^[ \t]*(?:[-*][ \t]*)?(?:\[ \]|todo\b|待办|待处理|下一步|next steps?\b|pending\b)"
    r"[ \t]*[:：]?[ \t]*(\S.*)$",
    re.IGNORECASE | re.MULTILINE,
)
# Tool-call ids are plumbing, not facts worth carrying.
_PLUMBING_ID = re.compile(r"^(?:toolu|tu|call|srvtoolu)_", re.IGNORECASE)


@dataclass
class Extraction:
    """Facts found in text, each once, in order of first appearance."""

    paths: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)

    def feed(self, text: str) -> None:
        """Scan one more text."""
        if not text:
            return
        cleaned = _URL.sub(" ", text)
        for match in _PATH.finditer(cleaned):
            _add(self.paths, match.group(1), MAX_PATHS)
        for match in _FILE.finditer(cleaned):
            _add(self.paths, match.group(1), MAX_PATHS)
        for match in _ID.finditer(text):
            value = match.group(1) or match.group(2)
            if not _PLUMBING_ID.match(value):
                _add(self.ids, value, MAX_IDS)
        for match in _PENDING.finditer(text):
            _add(self.pending, match.group(1).strip()[:_MAX_ITEM_CHARS], MAX_PENDING)


def _add(items: list[str], value: str, limit: int) -> None:
    value = value.strip().rstrip(".,;:)")
    if value and len(items) < limit and value not in items and len(value) <= _MAX_ITEM_CHARS:
        items.append(value)


def step_texts(step: Step) -> Iterator[str]:
    """Every text a step holds: assistant text, tool inputs, tool results."""
    for block in step.content:
        if isinstance(block, TextContent):
            yield block.text
        elif isinstance(block, ToolUseContent):
            yield json.dumps(block.input, ensure_ascii=False)
    for result in step.results:
        yield result.text


def conversation_texts(conversation: Conversation) -> Iterator[str]:
    """Every text in the conversation, in order: summary, then each round and its steps."""
    if conversation.summary is not None:
        yield conversation.summary.text
    for round_ in conversation.rounds:
        yield round_.user
        for step in round_.steps:
            yield from step_texts(step)


def extract(texts: Iterable[str]) -> Extraction:
    """The paths, ids and pending items in `texts`."""
    found = Extraction()
    for text in texts:
        found.feed(text)
    return found


def fallback_summary(
    schema: type[SummaryBase],
    conversation: Conversation,
    *,
    reason: str,
    ledger: KeyFactLedger | None = None,
    max_tokens: int | None = None,
) -> SummaryBase:
    """A summary of `conversation` in `schema`, built without a model.

    Starts from the previous summary when it validates against `schema` (so consecutive
    fallbacks accumulate), adds what the patterns find, then merges the ledger (under the
    `max_tokens` cap, when given).
    """
    data: dict[str, Any] = schema.empty()
    previous = conversation.summary.text if conversation.summary is not None else None
    if previous is not None:
        try:
            data = parse_summary(previous, schema).model_dump(mode="json")
        except SummaryFailure:
            data = schema.empty()
    found = extract(conversation_texts(conversation))
    key_paths: dict[str, str] = data.setdefault("key_paths", {})
    for path in found.paths:
        if path not in key_paths.values():
            key_paths.setdefault(path, path)
    key_ids: dict[str, str] = data.setdefault("key_ids", {})
    for value in found.ids:
        if value not in key_ids.values():
            key_ids.setdefault(value, value)
    pending = data.setdefault(schema.pending_field, [])
    if isinstance(pending, list):
        pending.extend(item for item in found.pending if item not in pending)
    data["compaction_note"] = (
        f"extractive fallback summary ({reason}); re-read the key paths for details"
    )
    (ledger or conversation.ledger).merge_into(data, max_tokens=max_tokens)
    return schema.model_validate(data)
