"""A cheap, CJK-aware token estimate used between calls that report exact usage.

Claude's tokenizer averages about 3.5 characters per token on English prose and code, and
roughly one token per CJK character; a flat "characters / 4" undercounts Chinese text by 3-4x,
which is how a Chinese-heavy pipeline overflows a window its accounting thought was half full.
The estimate deliberately errs high (it triggers compaction slightly early, never late).
"""

from __future__ import annotations

import json
import re
from typing import Any

# Characters per token for non-CJK text; slightly below the observed ~3.5 so the estimate errs high.
ASCII_CHARS_PER_TOKEN = 3.2
# Tokens per CJK character (Han, kana, hangul, full-width punctuation).
CJK_TOKENS_PER_CHAR = 1.0
# Fixed cost of one message's role/framing in the request.
MESSAGE_OVERHEAD_TOKENS = 4
# Fixed cost of a content block's framing (type, ids).
BLOCK_OVERHEAD_TOKENS = 3


def _is_cjk(code: int) -> bool:
    return (
        0x2E80 <= code <= 0x9FFF  # CJK radicals, kana, unified ideographs
        or 0xAC00 <= code <= 0xD7AF  # hangul syllables
        or 0xF900 <= code <= 0xFAFF  # compatibility ideographs
        or 0xFF00 <= code <= 0xFFEF  # full-width forms
        or 0x20000 <= code <= 0x2FA1F  # extension planes
    )


# The same ranges as `_is_cjk`, as one character class: counting runs with the regex engine
# is ~50x faster than a Python loop per character, and tool results run to tens of KB.
_CJK_RUNS = re.compile(
    "[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0002fa1f]+"
)


def count_cjk(text: str) -> int:
    """Return how many characters of `text` are CJK."""
    if text.isascii():
        return 0
    return sum(map(len, _CJK_RUNS.findall(text)))


def estimate_text_tokens(text: str, chars_per_token: float = ASCII_CHARS_PER_TOKEN) -> int:
    """Estimate the tokens of `text`: CJK characters one each, the rest by `chars_per_token`."""
    if not text:
        return 0
    cjk = count_cjk(text)
    other = len(text) - cjk
    return max(1, round(cjk * CJK_TOKENS_PER_CHAR + other / chars_per_token))


def estimate_json_tokens(value: Any, chars_per_token: float = ASCII_CHARS_PER_TOKEN) -> int:
    """Estimate the tokens of a JSON-serialisable value as the API would see it."""
    if isinstance(value, str):
        return estimate_text_tokens(value, chars_per_token)
    return estimate_text_tokens(
        json.dumps(value, ensure_ascii=False, separators=(",", ":")), chars_per_token
    )


def estimate_block_tokens(block: Any, chars_per_token: float = ASCII_CHARS_PER_TOKEN) -> int:
    """Estimate one content block (text, tool_use or tool_result) including its framing."""
    kind = block.get("type")
    if kind == "text":
        body = estimate_text_tokens(block["text"], chars_per_token)
    elif kind == "tool_use":
        body = estimate_text_tokens(block["name"], chars_per_token) + estimate_json_tokens(
            block["input"], chars_per_token
        )
    elif kind == "tool_result":
        content = block.get("content", "")
        if isinstance(content, str):
            body = estimate_text_tokens(content, chars_per_token)
        else:
            body = sum(estimate_block_tokens(b, chars_per_token) for b in content)
    else:
        body = estimate_json_tokens(block, chars_per_token)
    return body + BLOCK_OVERHEAD_TOKENS


def estimate_message_tokens(message: Any, chars_per_token: float = ASCII_CHARS_PER_TOKEN) -> int:
    """Estimate one `{"role", "content"}` message including its framing."""
    content = message["content"]
    if isinstance(content, str):
        body = estimate_text_tokens(content, chars_per_token)
    else:
        body = sum(estimate_block_tokens(b, chars_per_token) for b in content)
    return body + MESSAGE_OVERHEAD_TOKENS


def estimate_payload_tokens(payload: Any, chars_per_token: float = ASCII_CHARS_PER_TOKEN) -> int:
    """Estimate the input tokens of a whole request: system, tools and messages."""
    total = 0
    system = payload.get("system")
    if isinstance(system, str):
        total += estimate_text_tokens(system, chars_per_token)
    elif system:
        total += sum(estimate_block_tokens(b, chars_per_token) for b in system)
    for tool in payload.get("tools") or ():
        spec = {k: v for k, v in tool.items() if k != "cache_control"}
        total += estimate_json_tokens(spec, chars_per_token)
    total += sum(estimate_message_tokens(m, chars_per_token) for m in payload["messages"])
    return total
