"""How deeply an input file's data nests, judged before anything recurses into it: an offline
script or a recording line nested thousands of levels deep would otherwise exhaust the stack
in the parser, which is a `RecursionError` the actor restarts on and meets again
(docs/scenarios.md, "Offline script"; docs/recordings.md, "Format").

A JSON text is measured from its bytes in time linear in its size, with whole-buffer passes
(`replace`, `split`, `translate`) and no regular expression, which could backtrack over
unclosed strings. A parsed value (a TOML script's) is walked without recursion.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import accumulate
from typing import Any

MAX_DEPTH = 100
"""Arrays and objects (tables) may nest this deep in an input file, no deeper: a script or a
reply needs a handful of levels, and a few hundred exhaust the stack of whatever recurses."""

_MARKS = b"[]{}\n"
_NOT_MARKS = bytes(b for b in range(256) if b not in _MARKS)
_STEP = [1 if b in b"[{" else -1 if b in b"]}" else 0 for b in range(256)]
_CHUNK = 1 << 16


def json_too_deep(text: bytes, limit: int = MAX_DEPTH) -> int | None:
    """The line (from 1) of the JSON text `text` where arrays and objects first nest deeper
    than `limit`, or None when they never do. Exact for valid JSON; invalid JSON is then
    refused by the parser."""
    # Inside a string a backslash escapes the next character, and escapes pair from the
    # left: dropping `\\` first, then `\"`, leaves exactly the quotes that open and close
    # strings. JSON strings hold no raw newline, so the newlines left are the text's lines.
    plain = text.replace(b"\\\\", b"").replace(b'\\"', b"") if b"\\" in text else text
    outside = b"".join(plain.split(b'"')[::2]) if b'"' in plain else plain
    marks = outside.translate(None, _NOT_MARKS)
    level = 0
    # In chunks, so a worker thread running this hands the interpreter back between them.
    for start in range(0, len(marks), _CHUNK):
        steps = map(_STEP.__getitem__, marks[start : start + _CHUNK])
        levels = list(accumulate(steps, initial=level))
        if max(levels) > limit:
            deep = next(i for i, value in enumerate(levels) if value > limit)
            # levels[i] is the level after mark `start + i - 1`, the bracket that opened it.
            return marks[: start + deep - 1].count(b"\n") + 1
        level = levels[-1]
    return None


def too_deep_at(value: Any, limit: int = MAX_DEPTH) -> tuple[str | int, ...] | None:
    """Where in the parsed `value` lists and mappings first nest deeper than `limit` (the
    keys and indexes leading there), or None when they never do."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while stack:
        path, node = stack.pop()
        children = _children(node)
        if children is None:
            continue
        if len(path) >= limit:
            return path
        # Reversed, so the first child is looked at first and the path found is the first.
        stack.extend((((*path, key), child) for key, child in reversed(list(children))))
    return None


def _children(node: Any) -> Iterator[tuple[str | int, Any]] | None:
    if isinstance(node, Mapping):
        return ((str(key), child) for key, child in node.items())
    if isinstance(node, list):
        return iter(enumerate(node))
    return None
