"""Thinking blocks in the Messages API stand-in: issuing, signing and checking them.

A signature (and a `redacted_thinking` block's `data`) is `<claims>.<mac>`: the claims are
base64url JSON naming the model that wrote the block, a digest of the block's prefix, a
digest of its content and a serial; the mac is an HMAC-SHA256 of the claims under a secret
each stand-in draws for itself. So the stand-in can tell a block it never issued (no valid
mac) from one whose text was changed (content digest), one from another model (dropped, as
the API drops them) and one sent behind a different conversation (prefix digest).

A block's prefix is the request's `system` and `tools` and every (role, block) pair before
it, earlier blocks of its own message included, with `cache_control` and null fields left
out and string content read as one text block: merging consecutive same-role messages or
moving a cache breakpoint does not change it, editing the history before the block does.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from baton.context.tokens import BLOCK_OVERHEAD_TOKENS, estimate_block_tokens, estimate_text_tokens
from baton.context.validation import THINKING_BLOCK_TYPES
from baton.models.rules import thinking_type, thinks
from baton.testing._standin_models import StandInModel, ThinkingDisplay

HIDDEN_THINKING_TOKENS = 32
"""Output tokens billed for a thinking block whose text is not shown (display `omitted`)."""
_DIGEST_CHARS = 32
_MODIFIED = (
    "`thinking` or `redacted_thinking` blocks in the latest assistant message cannot be "
    "modified. These blocks must remain as they were in the original response."
)
_BOUND_ELSEWHERE = (
    "The block is bound to a different conversation. Remove the block, or set "
    '`thinking.block_binding.prefix_mismatch_behavior` to "drop_block".'
)
_THINKING_MISSING = (
    "When `thinking` is enabled, a final `assistant` message must start with a thinking block "
    "(preceeding the lastmost set of `tool_use` and `tool_result` blocks)."
)
_LOOP_CHANGED = (
    "the `thinking` and `redacted_thinking` blocks of the latest assistant message must be "
    "sent back as they were received, in their places and with the rest of that message "
    "unchanged, while it continues a tool loop the model ran with thinking"
)


@dataclass(frozen=True)
class DroppedBlock:
    """A thinking block the stand-in left out of a request before answering it, and why.

    `reason` is `other_model` (issued for another model: the API drops those silently) or
    `prefix_mismatch` (the conversation before it changed, or an earlier block was dropped
    for that, under `prefix_mismatch_behavior: "drop_block"`).
    """

    message: int
    index: int
    type: str
    reason: Literal["other_model", "prefix_mismatch"]


def _canonical(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()


def _digest(value: Any) -> str:
    return hashlib.sha256(_canonical(value)).hexdigest()[:_DIGEST_CHARS]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def blocks_of(content: Any) -> list[Any]:
    """A message's content as a block list (a string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def normalize_block(block: Any) -> Any:
    """`block` as the prefix sees it: no `cache_control`, no null fields, string results split."""
    if not isinstance(block, Mapping):
        return block
    out = {k: v for k, v in block.items() if k != "cache_control" and v is not None}
    if out.get("type") == "tool_result":
        out["content"] = [normalize_block(b) for b in blocks_of(out.get("content", []))]
    return out


def thinking_digest(block: Mapping[str, Any]) -> str:
    """The content digest a thinking block's signature carries."""
    return _digest(["thinking", block.get("thinking")])


class Prefix:
    """A running digest of a request's prefix, one (role, block) pair at a time."""

    def __init__(self, body: Mapping[str, Any]) -> None:
        self._hash = hashlib.sha256()
        self._feed(["system", [normalize_block(b) for b in blocks_of(body.get("system"))]])
        self._feed(["tools", [normalize_block(t) for t in body.get("tools") or []]])

    def _feed(self, value: Any) -> None:
        self._hash.update(_canonical(value) + b"\n")

    def add(self, role: str, block: Any) -> None:
        """Extend the prefix by one block of a `role` message."""
        self._feed([role, normalize_block(block)])

    @property
    def digest(self) -> str:
        """The digest of the prefix so far."""
        return self._hash.hexdigest()[:_DIGEST_CHARS]

    def copy(self) -> Prefix:
        """An independent copy to extend."""
        twin = Prefix.__new__(Prefix)
        twin._hash = self._hash.copy()
        return twin


@dataclass(frozen=True)
class Claims:
    """What a valid signature says about its block."""

    model: str
    prefix: str
    content: str


class Signer:
    """Issues and reads the stand-in's signatures under its own secret."""

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret if secret is not None else secrets.token_bytes(32)
        self._serial = itertools.count(1)

    def sign(self, model: str, prefix: str, content: str) -> str:
        """A signature binding a block to `model`, its prefix digest and its content digest."""
        claims = _b64(_canonical({"m": model, "p": prefix, "c": content, "n": next(self._serial)}))
        return f"{claims}.{self._mac(claims)}"

    def read(self, token: Any) -> Claims | None:
        """The claims of a signature this signer issued; None for anything else."""
        if not isinstance(token, str) or token.count(".") != 1:
            return None
        claims, mac = token.split(".")
        if not hmac.compare_digest(mac.encode(), self._mac(claims).encode()):
            return None
        try:
            data = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))
        except ValueError:
            return None
        if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in "mpc"):
            return None
        return Claims(model=data["m"], prefix=data["p"], content=data["c"])

    def _mac(self, claims: str) -> str:
        return _b64(hmac.new(self._secret, claims.encode(), hashlib.sha256).digest())


@dataclass
class BlockReview:
    """The thinking blocks of one request, checked: problems, drops, what the model sees.

    `messages` are the request's messages without the dropped blocks (a message left empty
    goes too); `prefix` is the digest of all of them, which the reply's blocks extend.
    """

    prefix: Prefix
    problems: list[str] = field(default_factory=list)
    dropped: list[DroppedBlock] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)


def _invalid(kind: str) -> str:
    if kind == "thinking":
        return "Invalid `signature` in `thinking` block."
    return "Invalid `data` in `redacted_thinking` block."


def _drop_on_mismatch(body: Mapping[str, Any]) -> bool:
    thinking = body.get("thinking")
    binding = thinking.get("block_binding") if isinstance(thinking, Mapping) else None
    return isinstance(binding, Mapping) and binding.get("prefix_mismatch_behavior") == "drop_block"


def review_blocks(body: Mapping[str, Any], model: str, signer: Signer) -> BlockReview:
    """Check every thinking block of a (valid) request against its signature."""
    messages: Sequence[Mapping[str, Any]] = body["messages"]
    drop_on_mismatch = _drop_on_mismatch(body)
    latest = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    prefix = Prefix(body)
    review = BlockReview(prefix=prefix)
    dropping = False
    for i, message in enumerate(messages):
        role = str(message.get("role"))
        blocks = blocks_of(message.get("content"))
        kept: list[Any] = []
        for j, block in enumerate(blocks):
            kind = str(block.get("type"))
            if kind in THINKING_BLOCK_TYPES:
                at = f"messages.{i}.content.{j}"
                claims = signer.read(block.get("signature" if kind == "thinking" else "data"))
                if claims is None:
                    review.problems.append(f"{at}: {_invalid(kind)}")
                elif claims.model != model:
                    review.dropped.append(DroppedBlock(i, j, kind, "other_model"))
                    continue
                elif kind == "thinking" and claims.content != thinking_digest(block):
                    review.problems.append(f"{at}: {_MODIFIED if i == latest else _invalid(kind)}")
                elif dropping or claims.prefix != prefix.digest:
                    if drop_on_mismatch:
                        # What followed a dropped block was written after it: drop those too.
                        dropping = True
                        review.dropped.append(DroppedBlock(i, j, kind, "prefix_mismatch"))
                        continue
                    review.problems.append(f"{at}: {_invalid(kind)} {_BOUND_ELSEWHERE}")
            prefix.add(role, block)
            kept.append(block)
        if len(kept) == len(blocks):
            review.messages.append(message)
        elif kept:
            review.messages.append({**message, "content": kept})
    return review


def tool_loop_problems(
    messages: Sequence[Mapping[str, Any]], issued: Mapping[str, list[Any]]
) -> list[str]:
    """A tool loop continued without the thinking of the reply it answers (empty: fine).

    `issued` maps the tool_use ids of replies that carried thinking to their normalised
    content; the assistant message a final tool_result message answers must be that content.
    """
    if len(messages) < 2:
        return []
    previous, last = messages[-2], messages[-1]
    results = blocks_of(last.get("content"))
    if last.get("role") != "user" or previous.get("role") != "assistant" or not results:
        return []
    if results[0].get("type") != "tool_result":
        return []
    # A compaction block before the reply is the server's, not the model's: not compared.
    sent = [b for b in blocks_of(previous.get("content")) if b.get("type") != "compaction"]
    ids = [b.get("id") for b in sent if b.get("type") == "tool_use"]
    original = next((issued[i] for i in ids if i in issued), None)
    if original is None or original == [normalize_block(b) for b in sent]:
        return []
    at = f"messages.{len(messages) - 2}"
    if any(b.get("type") in THINKING_BLOCK_TYPES for b in sent):
        return [f"{at}: {_LOOP_CHANGED}"]
    found = sent[0].get("type") if sent else "nothing"
    return [
        f"{at}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        f"`{found}`. {_THINKING_MISSING}"
    ]


@dataclass(frozen=True)
class ThinkingPlan:
    """How a reply to one request thinks.

    `between_tools`: the text right before a tool call comes back as a thinking block, when
    the request asks for `between_tools` or the model row does it by default (unless the
    request sends `disabled`)."""

    thinks: bool
    display: ThinkingDisplay
    between_tools: bool

    @classmethod
    def for_request(cls, body: Mapping[str, Any], card: StandInModel) -> ThinkingPlan:
        """The request's thinking settings, with the model's defaults for what it leaves out."""
        kind = thinking_type(body)
        config = body.get("thinking")
        display = config.get("display") if isinstance(config, Mapping) else None
        return cls(
            thinks=thinks(body, card.rules),
            display=display if display in ("summarized", "omitted") else card.thinking_display,
            between_tools=kind == "between_tools"
            or (card.between_tools_as_thinking and kind != "disabled"),
        )


def last_user_text(body: Mapping[str, Any]) -> str:
    """The text of the last user message, tool results included."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") != "user":
            continue
        parts: list[str] = []
        for block in blocks_of(message.get("content")):
            if block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif block.get("type") == "tool_result":
                parts += [str(b.get("text", "")) for b in blocks_of(block.get("content", []))]
        return " ".join(parts)
    return ""


def issue_blocks(
    content: list[dict[str, Any]],
    *,
    body: Mapping[str, Any],
    plan: ThinkingPlan,
    model: str,
    signer: Signer,
    prefix: Prefix,
    redacted: bool,
) -> list[dict[str, Any]]:
    """The reply's blocks with its thinking added, every thinking block signed.

    `content` is the scripted reply; `prefix` is the request's (after any dropped blocks),
    which each issued block is bound to together with the reply blocks before it;
    `redacted` adds a `redacted_thinking` block after the thinking (when the reply thinks).
    """
    shown = plan.display == "summarized"
    blocks: list[dict[str, Any]] = []
    if plan.thinks:
        quoted = " ".join(last_user_text(body).split())[:60] or "the request"
        blocks.append({"type": "thinking", "thinking": f"Considering: {quoted}" if shown else ""})
        if redacted:
            blocks.append({"type": "redacted_thinking"})
    for k, block in enumerate(content):
        before_tool = k + 1 < len(content) and content[k + 1]["type"] == "tool_use"
        if plan.between_tools and block["type"] == "text" and before_tool:
            blocks.append({"type": "thinking", "thinking": block["text"] if shown else ""})
        else:
            blocks.append(block)
    running = prefix.copy()
    signed: list[dict[str, Any]] = []
    for block in blocks:
        if block["type"] == "thinking":
            signature = signer.sign(model, running.digest, thinking_digest(block))
            finished = {**block, "signature": signature}
        elif block["type"] == "redacted_thinking":
            finished = {**block, "data": signer.sign(model, running.digest, "redacted")}
        else:
            finished = block
        running.add("assistant", finished)
        signed.append(finished)
    return signed


def output_tokens(content: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """The reply's output tokens and, of those, its thinking tokens."""
    thinking = 0
    other = 0
    for block in content:
        if block["type"] == "thinking" and block["thinking"]:
            thinking += estimate_text_tokens(block["thinking"]) + BLOCK_OVERHEAD_TOKENS
        elif block["type"] in THINKING_BLOCK_TYPES:
            thinking += HIDDEN_THINKING_TOKENS
        else:
            other += estimate_block_tokens(block)
    return max(1, thinking + other), thinking
