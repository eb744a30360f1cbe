"""The extractive summary the simulation of server-side compaction writes.

Deliberately imperfect, as a model's summary can be: the head of each user text and tool
result (the first one always, then the latest that fit `SUMMARY_MAX_TOKENS`) and the tails of
the last assistant texts. A fact survives only if it sits in that text; of the `<key_facts>`
the instructions list, only those are named again (docs/context.md, "Server-side context
management"), so a client that needs its facts must check the block and carry the rest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from baton.context.tokens import estimate_text_tokens

SUMMARY_MAX_TOKENS = 2_000
"""The simulated summary's cap (in estimated tokens): older request heads go first past it."""
_HEAD_CHARS = 200  # of each user text and tool result
_TAIL_CHARS = 400  # of each of the last assistant texts
_LAST_ASSISTANT_TEXTS = 3
_LINE_TOKENS = 2  # the "- " and the newline of a line
_KEY_FACTS = re.compile(r"<key_facts>(.*?)</key_facts>", re.DOTALL)


def _texts(block: Mapping[str, Any]) -> Iterator[str]:
    kind = block.get("type")
    if kind == "text":
        yield str(block.get("text", ""))
    elif kind == "compaction" and isinstance(block.get("content"), str):
        yield str(block["content"])
    elif kind == "tool_result":
        content = block.get("content")
        if isinstance(content, str):
            yield content
        for inner in content if isinstance(content, list) else ():
            if isinstance(inner, Mapping) and inner.get("type") == "text":
                yield str(inner.get("text", ""))


def _flat(text: str, limit: int) -> str:
    return " ".join(text[: limit * 2].split())[:limit]


def _key_facts(instructions: str) -> list[str]:
    """The facts a `<key_facts>` section of the instructions lists: the string values of its
    JSON (as baton's ledger writes it), else its non-empty lines."""
    match = _KEY_FACTS.search(instructions)
    if match is None:
        return []
    section = match.group(1).strip()
    try:
        data = json.loads(section)
    except ValueError:
        return [line.strip().lstrip("-*").strip() for line in section.splitlines() if line.strip()]
    found: list[str] = []
    stack: list[Any] = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, Mapping):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return found


def extractive_summary(messages: Sequence[Mapping[str, Any]], instructions: str | None) -> str:
    """The summary of `messages` (what the server read), naming again the `<key_facts>` of
    `instructions` that it happens to contain."""
    heads: list[str] = []
    tails: list[str] = []
    for message in messages:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks if isinstance(blocks, list) else ():
            for text in _texts(block):
                if message.get("role") == "user" or block.get("type") == "compaction":
                    heads.append(_flat(text, _HEAD_CHARS))
                else:
                    tails.append(_flat(text, _TAIL_CHARS))
    kept_tails = [t for t in tails[-_LAST_ASSISTANT_TEXTS:] if t]
    budget = SUMMARY_MAX_TOKENS - sum(estimate_text_tokens(t) + _LINE_TOKENS for t in kept_tails)
    chosen: list[str] = []
    for head in reversed([h for h in heads[1:] if h]):
        cost = estimate_text_tokens(head) + _LINE_TOKENS
        if cost > budget:
            break
        chosen.append(head)
        budget -= cost
    first = [heads[0]] if heads and heads[0] else []
    lines = ["Earlier requests and results:", *(f"- {h}" for h in first + chosen[::-1])]
    lines += ["Latest work:", *(f"- {t}" for t in kept_tails)]
    text = "\n".join(lines)
    facts = [fact for fact in _key_facts(instructions or "") if fact and fact in text]
    if facts:
        text += "\nKey facts: " + ", ".join(dict.fromkeys(facts))
    return text
