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
from baton.context.errors import SummaryFailure
from baton.context.ledger import KeyFactLedger
from baton.context.steps import Step, TextContent, ToolUseContent
from baton.context.summary_format import SummaryBase, parse_summary

MAX_PATHS = 100
MAX_IDS = 100
MAX_PENDING = 30
_MAX_ITEM_CHARS = 300

# Patterns run on tool results of tens of KB, on the event loop: each is linear in its
# input, with no two quantifiers that could split the same run of characters between them
# (docs/context.md, "extract_state"). A URL scheme is short; an unbounded one made every letter
# of a long dotted run scan to its end. The ledger's patterns find URLs, paths and ids with
# these same ones (`ledger_patterns`).
URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{0,31}://\S+")
PATH = re.compile(r"(?<![\w:/.~-])(~?/?(?:[\w.-]+/)+[\w.-]*\w)")
FILE = re.compile(
    r"(?<![\w/.-])([\w-]+\.(?:json|jsonl|py|md|txt|yaml|yml|toml|csv|log|html|xml|sql|sh))\b"
)
UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_ID_RUN = re.compile(r"[A-Za-z0-9_-]+")
_DIGIT = re.compile(r"[0-9]")
_SEPARATOR = re.compile(r"([_-])")
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
        cleaned = URL.sub(" ", text)
        for match in PATH.finditer(cleaned):
            _add(self.paths, match.group(1), MAX_PATHS)
        for match in FILE.finditer(cleaned):
            _add(self.paths, match.group(1), MAX_PATHS)
        for value in _ids(text):
            if not _PLUMBING_ID.match(value):
                _add(self.ids, value, MAX_IDS)
        for match in _PENDING.finditer(text):
            _add(self.pending, match.group(1).strip()[:_MAX_ITEM_CHARS], MAX_PENDING)


def _ids(text: str) -> list[str]:
    """The ids in `text`, in order of appearance (`id_spans`' values)."""
    return [value for _, _, value in id_spans(text)]


def id_spans(text: str) -> list[tuple[int, int, str]]:
    """The ids in `text`, in order of appearance, with where each starts and ends: words of
    ASCII letters and digits joined by `_` or `-` that start with a letter and end in a part
    that starts with a digit (`INV-2024-0042`, `sample_03`, `order-12b`; each cut after its
    last such part), and UUIDs.

    Found run by run, in one pass each: as one regular expression, a long `a-a-a-…` with no
    digit part took time growing with the square of its length (20 s for 40 KB)."""
    words: list[tuple[int, int, str]] = []
    for run in _ID_RUN.finditer(text):
        word = run.group()
        # Most runs are plain words: with no separator and digit, no id (cheap to rule out,
        # and this runs on every tool result).
        if ("_" not in word and "-" not in word) or not _DIGIT.search(word):
            continue
        start, end = run.span()
        # A word character touching the run (`é`) means no word boundary there.
        glued_left = start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_")
        glued_right = end < len(text) and (text[end].isalnum() or text[end] == "_")
        words.extend(_run_ids(word, start, glued_left, glued_right))
    # As a scan from left to right would: of two that overlap, the one that starts first (at
    # the same place, the word), then on after its end.
    candidates = sorted(
        [(start, 0, end, value) for start, end, value in words]
        + [(m.start(), 1, m.end(), m.group()) for m in UUID.finditer(text)]
    )
    found: list[tuple[int, int, str]] = []
    reached = 0
    for start, _, end, value in candidates:
        if start >= reached:
            found.append((start, end, value))
            reached = end
    return found


def _run_ids(
    run: str, offset: int, glued_left: bool, glued_right: bool
) -> list[tuple[int, int, str]]:
    pieces = _SEPARATOR.split(run)
    parts = pieces[0::2]
    # What precedes each part: nothing at the run's start (a word character glued to it
    # counts as `_`: no boundary), else its separator.
    before = ["_" if glued_left else "", *pieces[1::2]]
    starts = []  # each part's offset in the text
    position = offset
    for index, part in enumerate(parts):
        position += len(before[index]) if index else 0
        starts.append(position)
        position += len(part)
    found: list[tuple[int, int, str]] = []
    first = 0
    while first < len(parts):
        head = parts[first]
        if not (head[:1].isascii() and head[:1].isalpha() and before[first] in ("", "-")):
            first += 1
            continue
        last = None
        index = first + 1
        while index < len(parts) and parts[index]:
            at_boundary = before[index + 1] == "-" if index + 1 < len(parts) else not glued_right
            if parts[index][0].isdigit() and at_boundary:
                last = index
            index += 1
        if last is None:
            # No later start in this chain can end in a digit part either.
            first = max(index, first + 1)
            continue
        end = starts[last] + len(parts[last])
        found.append((starts[first], end, run[starts[first] - offset : end - offset]))
        first = last + 1
    return found


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
