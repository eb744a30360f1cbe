"""Server-side context management in the Messages API stand-in: betas, compaction, usage.

The stand-in plays both betas through `baton.context.server_edits` (`play_turn`), the one
simulation the offline model plays too (docs/context.md, "Server-side context management").
A compaction block it writes carries an opaque `encrypted_content` and a `signature` over
both; a block sent back with either changed is refused, as the API refuses an altered block.
The reply's
`usage` lists the compaction's own `iterations` entry, whose tokens stay out of the top-level
counts; a compaction pause answers with the block alone and no `message` iteration.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from baton.context.payload import CompactionBlock, Payload
from baton.context.server_edits import BETA_FOR_EDIT, ServerTurn, uses_server_edits
from baton.context.validation import THINKING_BLOCK_TYPES
from baton.models.protocol import CallContext, Model, bind_call
from baton.models.scripted import ScriptedResponse
from baton.testing._standin_state import StandInState
from baton.testing._standin_thinking import (
    BlockReview,
    Prefix,
    Signer,
    ThinkingPlan,
    blocks_of,
    issue_blocks,
    normalize_block,
)

_INVALID = "Invalid `signature` in `compaction` block: send it back exactly as it was received."
_USAGE_COUNTS = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
)


def beta_names(headers: Mapping[str, str]) -> list[str]:
    """The betas an `anthropic-beta` header names (comma-separated)."""
    return [name.strip() for name in headers.get("anthropic-beta", "").split(",") if name.strip()]


def _digest(block: Mapping[str, Any]) -> str:
    sealed = [block.get("content"), block.get("encrypted_content")]
    return hashlib.sha256(json.dumps(sealed, ensure_ascii=False).encode()).hexdigest()[:32]


def sealer(signer: Signer, model: str) -> Callable[[CompactionBlock], CompactionBlock]:
    """How the stand-in finishes a compaction block: opaque `encrypted_content`, a signature."""

    def seal(block: CompactionBlock) -> CompactionBlock:
        opaque = hashlib.sha256(str(block.get("content")).encode()).hexdigest()[:24]
        sealed: CompactionBlock = {**block, "encrypted_content": f"standin-{opaque}"}
        return {**sealed, "signature": signer.sign(model, "compaction", _digest(sealed))}

    return seal


def compaction_problems(messages: Sequence[Mapping[str, Any]], signer: Signer) -> list[str]:
    """Signed compaction blocks sent back changed, or signed by someone else (empty: fine).
    A block with no signature is taken as it is."""
    problems: list[str] = []
    for i, message in enumerate(messages):
        for j, block in enumerate(blocks_of(message.get("content"))):
            if not isinstance(block, Mapping) or block.get("type") != "compaction":
                continue
            if block.get("signature") is None:
                continue
            claims = signer.read(block["signature"])
            if claims is None or claims.content != _digest(block):
                problems.append(f"messages.{i}.content.{j}: {_INVALID}")
    return problems


def iterations_usage(turn: ServerTurn, message: dict[str, Any] | None) -> dict[str, Any]:
    """The reply's `usage`: `message`'s (None under a compaction pause: all zero), with
    `iterations` listing the compaction first when one ran."""
    if turn.compaction_usage is None:
        assert message is not None, "only a compaction pause has no message usage"
        return message
    spent = turn.compaction_usage
    entry = {
        "type": "compaction",
        "input_tokens": spent.compaction_input_tokens,
        "cache_creation_input_tokens": spent.compaction_cache_creation_input_tokens,
        "cache_read_input_tokens": spent.compaction_cache_read_input_tokens,
        "output_tokens": spent.compaction_output_tokens,
    }
    if message is None:
        zero = {
            **dict.fromkeys(_USAGE_COUNTS, 0),
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "service_tier": "standard",
        }
        return {**zero, "iterations": [entry]}
    sampled = {"type": "message", **{key: message[key] for key in _USAGE_COUNTS}}
    return {**message, "iterations": [entry, sampled]}


async def reply_from_model(
    model: Model, body: Mapping[str, Any], call: CallContext | None
) -> ScriptedResponse:
    """What `model` answers to `body` (the view) under `call`, as a reply the stand-in issues."""
    payload = cast(Payload, {k: v for k, v in body.items() if k != "stream"})
    if uses_server_edits(body):  # the model plays them too: on the view, to no effect
        payload["betas"] = sorted(set(BETA_FOR_EDIT.values()))
    if call is None:
        response = await model.create(payload)
    else:
        with bind_call(call):
            response = await model.create(payload)
    # The stand-in adds (and signs) its own thinking and compaction; the model's would not
    # verify here.
    own = THINKING_BLOCK_TYPES | {"compaction"}
    content = [b for b in response.content if b.get("type") not in own]
    return ScriptedResponse.model_validate(
        {"content": content, "stop_reason": response.stop_reason}
    )


def issue_reply(
    state: StandInState, content: list[dict[str, Any]], review: BlockReview, turn: ServerTurn
) -> list[dict[str, Any]]:
    """The reply's final blocks: the compaction block first when one was written, thinking
    added and signed; a reply that thought is remembered by its tool ids (a tool loop from it
    must send all of it back, the compaction block aside)."""
    body = turn.body
    plan = ThinkingPlan.for_request(body, state.models[body["model"]])
    if plan.thinks:
        state.thinking_replies += 1
    every = state.redacted_thinking_every
    prefix = review.prefix
    if turn.compaction is not None:
        # The next request is read from the compaction block on: bind the reply to that.
        prefix = Prefix(body)
        prefix.add("assistant", dict(turn.compaction))
    blocks = issue_blocks(
        content,
        body=body,
        plan=plan,
        model=body["model"],
        signer=state.signer,
        prefix=prefix,
        redacted=plan.thinks and every > 0 and state.thinking_replies % every == 0,
    )
    if turn.compaction is not None:
        blocks = [dict(turn.compaction), *blocks]
    if any(b["type"] in THINKING_BLOCK_TYPES for b in blocks):
        normalised = [normalize_block(b) for b in blocks if b["type"] != "compaction"]
        for block in blocks:
            if block["type"] == "tool_use":
                state.issued[block["id"]] = normalised
    return blocks
