"""The shape of a JSON text — how deep it nests, how many values it holds — measured in
time linear in its size, before anything parses it (docs/architecture.md, "What a request
body may cost").

Parsing and validating a body cost far more than its bytes suggest: each nesting level is a
level of recursion, and each value a Python object built while holding the interpreter lock
(8 MB of `[[],[],…]` takes the JSON parser 0.6 s, during which no other thread, and so no
actor, runs). Both are bounded before the parse, from the raw bytes, with a fixed number of
whole-buffer passes (`bytes.replace`, `split`, `count`, `translate`) and no regular
expression: a pattern that backtracks turns a body of unclosed strings quadratic.

Each pass is a single C call of at most tens of milliseconds on the largest body the API
takes; run on a worker thread, the event loop gets the interpreter back between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate

_WHITESPACE = b" \t\r\n"
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_DEPTH_STEP = [1 if b in b"[{" else -1 if b in b"]}" else 0 for b in range(256)]
_DEPTH_CHUNK = 1 << 16


@dataclass(frozen=True)
class JsonShape:
    """What `json_shape` found: `values` counts every scalar, array, object and object key
    (a key costs the parser as much as a value); `depth` is how deeply arrays and objects
    nest (0 for a scalar), or None when it was not measured because `values` was over the
    limit already."""

    values: int
    depth: int | None


def json_shape(body: bytes, *, max_values: int) -> JsonShape:
    """The shape of the JSON text `body` (UTF-8), exact for valid JSON; for invalid JSON an
    estimate, which the parser then refuses on its own.

    Counting stops at `max_values`: a text holding more is reported with `depth` None.
    """
    # Inside a string a backslash escapes the next character, and escapes pair from the
    # left: dropping `\\` first, then `\"`, leaves exactly the quotes that open and close.
    plain = body.replace(b"\\\\", b"").replace(b'\\"', b"") if b"\\" in body else body
    quotes = plain.count(b'"')
    # Every string is a key or a value: more quotes than this already means too many, and
    # the split below would make as many pieces.
    if quotes > 2 * max_values:
        return JsonShape(values=quotes // 2, depth=None)
    outside = b"".join(plain.split(b'"')[::2]).translate(None, _WHITESPACE)
    opened = outside.count(b"[") + outside.count(b"{")
    empty = outside.count(b"[]") + outside.count(b"{}")
    # A non-empty container's elements are one more than its commas; adding the containers
    # and the top-level value counts every value once, and each key has its colon.
    values = outside.count(b",") + opened - empty + 1 + outside.count(b":")
    if values > max_values:
        return JsonShape(values=values, depth=None)
    if opened <= 1:
        return JsonShape(values=values, depth=opened)
    return JsonShape(values=values, depth=_depth(outside.translate(None, _NOT_BRACKETS)))


def _depth(brackets: bytes) -> int:
    # In chunks, so a thread running this hands the interpreter back between them.
    deepest = level = 0
    for start in range(0, len(brackets), _DEPTH_CHUNK):
        steps = map(_DEPTH_STEP.__getitem__, brackets[start : start + _DEPTH_CHUNK])
        levels = list(accumulate(steps, initial=level))
        deepest = max(deepest, *levels)
        level = levels[-1]
    return deepest
