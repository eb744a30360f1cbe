"""What baton asks of the Messages API's server-side context management: the
`context_management` edits a request carries and the betas they need (docs/context.md,
"Server-side context management").

Two edits are used: `compact_20260112` for `strategy = "server"` (the server summarizes the
history past a trigger and pauses, so baton journals the summary before it goes on) and
`clear_tool_uses_20250919` for `tool_result_clearing = "server"` (the server replaces older
tool results by a placeholder; baton keeps the whole history). Both are plain dicts, as the
API documents them; `with_edits` adds them to a payload with the betas they need.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from baton.context.ledger import KeyFact
from baton.context.payload import Payload
from baton.context.server_edits import (
    BETA_FOR_EDIT,
    CLEAR_THINKING_EDIT,
    CLEAR_TOOL_USES_EDIT,
    COMPACT_EDIT,
    MIN_COMPACT_TRIGGER,
)

CLEAR_SHARE_OF_THRESHOLD = 4
"""`clear_at_least` defaults to the compaction threshold divided by this (see
`clear_tool_uses_edit`)."""

_FACTS_DIRECTIVE = (
    "\n\nThe summary must repeat each of these key facts (paths and ids) verbatim, "
    "character for character; later work looks them up by their exact spelling:\n"
)


def compact_edit(
    trigger: int, instructions: str, *, pause: bool = True, facts: Sequence[KeyFact] = ()
) -> dict[str, Any]:
    """The `compact_20260112` edit: compact once a request's input reaches `trigger` tokens,
    with `instructions` (the agent's compact prompt) and the key-fact ledger's `facts`
    appended to them, pausing so the compaction is journaled before the work goes on."""
    text = instructions
    if facts:
        listed = "\n".join(f"- {fact.value}" for fact in facts)
        text += f"{_FACTS_DIRECTIVE}<key_facts>\n{listed}\n</key_facts>"
    return {
        "type": COMPACT_EDIT,
        "trigger": {"type": "input_tokens", "value": max(MIN_COMPACT_TRIGGER, trigger)},
        "instructions": text,
        "pause_after_compaction": pause,
    }


def clear_tool_uses_edit(
    *, keep: int, clear_at_least: int, trigger: int | None = None
) -> dict[str, Any]:
    """The `clear_tool_uses_20250919` edit: past `trigger` input tokens (default:
    `clear_at_least`), the results of all but the newest `keep` tool uses become a
    placeholder, only when that frees at least `clear_at_least` tokens.

    A clearing breaks the prompt cache from the first block it changes, so the cleared
    part must be large enough for the cheaper turns after it to repay the re-written suffix
    (docs/context.md, "Server-side context management"): `clear_at_least` is a batch,
    as a client-side strip batch is."""
    return {
        "type": CLEAR_TOOL_USES_EDIT,
        "trigger": {"type": "input_tokens", "value": trigger or clear_at_least},
        "keep": {"type": "tool_uses", "value": keep},
        "clear_at_least": {"type": "input_tokens", "value": clear_at_least},
    }


def with_edits(payload: Payload, edits: Sequence[dict[str, Any]]) -> Payload:
    """`payload` with `edits` as its `context_management` and the betas they need (a
    `clear_thinking_20251015` edit first, as the API requires); unchanged when none."""
    if not edits:
        return payload
    ordered = sorted(edits, key=lambda edit: edit["type"] != CLEAR_THINKING_EDIT)
    betas = sorted({BETA_FOR_EDIT[edit["type"]] for edit in ordered})
    payload["context_management"] = {"edits": ordered}
    payload["betas"] = betas
    return payload


def cleared_tokens(context_management: dict[str, Any] | None) -> int:
    """The input tokens the server's clearing took off a request (0: none)."""
    if not context_management:
        return 0
    total = 0
    for edit in context_management.get("applied_edits") or ():
        if isinstance(edit, dict) and isinstance(edit.get("cleared_input_tokens"), int):
            total += edit["cleared_input_tokens"]
    return total
