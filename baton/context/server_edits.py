"""The one simulation of the Messages API's server-side context management.

The API reads a request that declares `context_management` edits differently from what the
client sent (docs/context.md, "Server-side context management"):

* it ignores every message block before the latest `compaction` block (that block's assistant
  message starts what the model sees);
* `clear_thinking_20251015` drops the thinking of all but the last `keep` assistant turns;
* `clear_tool_uses_20250919`, once the input reaches its trigger, replaces the results of all
  but the last `keep` tool uses with a placeholder (and, with `clear_tool_inputs`, their
  inputs), unless that frees fewer than `clear_at_least` tokens, and reports it in
  `context_management.applied_edits`;
* `compact_20260112`, once the input reaches its trigger, summarizes what the model sees into
  a `compaction` block that starts the reply (alone, with `stop_reason: "compaction"`, under
  `pause_after_compaction`), billed as its own `compaction` entry of `usage.iterations`.

The Messages API stand-in, the offline `ScriptedModel` and `baton cost --what-if` all play it
through this module, with token counts from the project's estimator (scaled by a model's
tokenizer where the caller passes `count`), as `baton.context.prompt_cache` is the one cache
simulation. The summary is extractive and deliberately imperfect: a fact survives only if it
happens to sit in the text it extracts, so a client must check the block for its key facts.
Every function is linear in the size of the request.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from baton.context._edit_checks import (
    BETA_FOR_EDIT,
    CLEAR_THINKING_EDIT,
    CLEAR_TOOL_USES_EDIT,
    COMPACT_BETA,
    COMPACT_EDIT,
    CONTEXT_MANAGEMENT_BETA,
    MIN_COMPACT_TRIGGER,
    check_edits,
    compaction_without_edit,
)
from baton.context._server_summary import SUMMARY_MAX_TOKENS, extractive_summary
from baton.context.payload import CompactionBlock, Message
from baton.context.prompt_cache import CacheUsage, PrefixCache
from baton.context.tokens import (
    estimate_block_tokens,
    estimate_payload_tokens,
    estimate_text_tokens,
)
from baton.context.usage import Usage

__all__ = [
    "BETA_FOR_EDIT",
    "CLEARED_TOOL_RESULT",
    "CLEAR_THINKING_EDIT",
    "CLEAR_TOOL_USES_EDIT",
    "COMPACT_BETA",
    "COMPACT_EDIT",
    "CONTEXT_MANAGEMENT_BETA",
    "MIN_COMPACT_TRIGGER",
    "SUMMARY_MAX_TOKENS",
    "ServerTurn",
    "ServerView",
    "compacted_body",
    "compaction_edit",
    "edit_problems",
    "play_turn",
    "server_view",
    "simulated_compaction",
    "since_compaction",
    "uses_server_edits",
    "with_cache_split",
]

DEFAULT_COMPACT_TRIGGER = 150_000
DEFAULT_CLEAR_TRIGGER = 100_000
DEFAULT_KEEP_TOOL_USES = 3
DEFAULT_KEEP_THINKING_TURNS = 1
CLEARED_TOOL_RESULT = "[This tool result was cleared by the server to save context.]"
"""The text a cleared tool result's content is replaced with."""
DEFAULT_INSTRUCTIONS = (
    "Summarize the conversation so far so that the work can continue from the summary alone: "
    "the task, what was done, what was found, and what is left."
)
_THINKING = ("thinking", "redacted_thinking")
TokenCount = Callable[[int], int]
"""A model's tokenizer applied to an estimate (the identity for the estimator's own count)."""


def _same(tokens: int) -> int:
    return tokens


@dataclass(frozen=True)
class ServerView:
    """What the server makes of one request before the model answers it."""

    messages: list[Message]
    """What the model sees: from the latest compaction block on, with the clearing applied."""
    applied_edits: list[dict[str, Any]]
    """The edits that changed the request, as `context_management.applied_edits` reports them."""
    compaction_due: bool
    """The compact edit's trigger is reached (by `input_tokens`)."""
    input_tokens: int
    """Of system, tools and `messages` as seen."""


def edit_problems(
    body: Mapping[str, Any], betas: Collection[str], *, thinks: bool | None = None
) -> list[str]:
    """Every rule of server-side context management `body` breaks, as the API words its 400.

    `betas` are the request's `anthropic-beta` names; `thinks` says whether the request has
    the model think (default: judged from `body["thinking"]` alone, which a model that always
    thinks overrides)."""
    if thinks is None:
        thinking = body.get("thinking")
        thinks = isinstance(thinking, Mapping) and thinking.get("type") in ("adaptive", "enabled")
    problems, declared = check_edits(body, betas, thinks)
    if COMPACT_EDIT not in declared:
        where = compaction_without_edit(body.get("messages"))
        if where is not None:
            problems.append(
                f"{where}: a request carrying a `compaction` block must declare the "
                f"{COMPACT_EDIT!r} edit in context_management.edits (beta {COMPACT_BETA!r})"
            )
    return problems


def uses_server_edits(body: Mapping[str, Any]) -> bool:
    """Whether the server reads `body` through this simulation (it declares edits)."""
    return body.get("context_management") is not None


def _edits(body: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    config = body.get("context_management")
    edits = config.get("edits") if isinstance(config, Mapping) else None
    for edit in edits if isinstance(edits, list) else ():
        if isinstance(edit, Mapping):
            yield edit


def compaction_edit(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The request's `compact_20260112` edit, if it declares one."""
    return next((e for e in _edits(body) if e.get("type") == COMPACT_EDIT), None)


def _blocks(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def since_compaction(messages: Sequence[Message]) -> list[Message]:
    """`messages` from the latest compaction block on: that block's assistant message, cut
    to start at it, then every later message (all of them when none carries one)."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        content = message.get("content")
        if message.get("role") != "assistant" or not isinstance(content, list):
            continue
        for j in range(len(content) - 1, -1, -1):
            block = content[j]
            if isinstance(block, Mapping) and block.get("type") == "compaction":
                head = message if j == 0 else cast(Message, {**message, "content": content[j:]})
                return [head, *messages[i + 1 :]]
    return list(messages)


def server_view(body: Mapping[str, Any], *, count: TokenCount | None = None) -> ServerView:
    """What the server makes of `body`: the messages it reads, the edits it applied, whether
    compaction is due; `count` turns an estimate into the model's tokens."""
    count = count or _same
    messages = since_compaction(body.get("messages") or [])
    tokens = estimate_payload_tokens({**body, "messages": messages})
    applied: list[dict[str, Any]] = []
    compact: Mapping[str, Any] | None = None
    for edit in _edits(body):
        kind = edit.get("type")
        if kind == CLEAR_THINKING_EDIT:
            cleared, done = _clear_thinking(messages, edit.get("keep"))
        elif kind == CLEAR_TOOL_USES_EDIT:
            cleared, done = _clear_tool_uses(messages, edit, tokens, count)
        else:
            compact = edit if kind == COMPACT_EDIT else compact
            continue
        if done is not None:
            after = estimate_payload_tokens({**body, "messages": cleared})
            # In the model's tokens, so what an edit reports adds up with what is billed.
            applied.append({**done, "cleared_input_tokens": count(tokens) - count(after)})
            messages, tokens = cleared, after
    total = count(tokens)
    due = compact is not None and total >= _value(compact.get("trigger"), DEFAULT_COMPACT_TRIGGER)
    return ServerView(messages, applied, due, total)


def _value(setting: Any, default: int) -> int:
    if isinstance(setting, Mapping) and isinstance(setting.get("value"), int):
        return int(setting["value"])
    return default


def _clear_thinking(
    messages: list[Message], keep: Any
) -> tuple[list[Message], dict[str, Any] | None]:
    if keep == "all" or (isinstance(keep, Mapping) and keep.get("type") == "all"):
        return messages, None
    kept = _value(keep, DEFAULT_KEEP_THINKING_TURNS)
    turns = [
        i
        for i, m in enumerate(messages)
        if m.get("role") == "assistant" and any(b.get("type") in _THINKING for b in _blocks(m))
    ]
    cleared = turns[: max(0, len(turns) - kept)]
    if not cleared:
        return messages, None
    out = list(messages)
    for i in cleared:
        rest = [
            b for b in _blocks(out[i]) if b.get("type") not in ("thinking", "redacted_thinking")
        ]
        out[i] = cast(Message, {**out[i], "content": rest})
    out = [m for m in out if _blocks(m)]  # a turn that only thought is gone
    return out, {"type": CLEAR_THINKING_EDIT, "cleared_thinking_turns": len(cleared)}


def _clear_tool_uses(
    messages: list[Message], edit: Mapping[str, Any], tokens: int, count: TokenCount
) -> tuple[list[Message], dict[str, Any] | None]:
    """`messages` with the edit applied (`tokens`: their estimate), and its report."""
    uses: list[tuple[int, int, Mapping[str, Any]]] = []  # (message, block, tool_use)
    results: dict[str, tuple[int, int]] = {}  # tool_use_id -> (message, block)
    for i, message in enumerate(messages):
        for j, block in enumerate(_blocks(message)):
            if block.get("type") == "tool_use":
                uses.append((i, j, block))
            elif block.get("type") == "tool_result":
                results[str(block.get("tool_use_id"))] = (i, j)
    trigger = edit.get("trigger")
    if isinstance(trigger, Mapping) and trigger.get("type") == "tool_uses":
        reached = len(uses) >= _value(trigger, 0)
    else:
        reached = count(tokens) >= _value(trigger, DEFAULT_CLEAR_TRIGGER)
    kept = _value(edit.get("keep"), DEFAULT_KEEP_TOOL_USES)
    excluded = set(edit.get("exclude_tools") or ())
    inputs = edit.get("clear_tool_inputs")
    candidates = [u for u in uses[: max(0, len(uses) - kept)] if u[2].get("name") not in excluded]
    if not reached or not candidates:
        return messages, None
    replaced: dict[tuple[int, int], Any] = {}
    freed = 0
    for i, j, use in candidates:
        if inputs is True or (isinstance(inputs, list) and use.get("name") in inputs):
            replaced[(i, j)] = {**use, "input": {}}
        where = results.get(str(use.get("id")))
        if where is not None:
            result = _blocks(messages[where[0]])[where[1]]
            replaced[where] = {**result, "content": CLEARED_TOOL_RESULT}
    for (i, j), new in replaced.items():
        freed += estimate_block_tokens(_blocks(messages[i])[j]) - estimate_block_tokens(new)
    if count(tokens) - count(tokens - freed) < _value(edit.get("clear_at_least"), 0):
        return messages, None
    out = list(messages)
    for i in sorted({i for i, _ in replaced}):
        content = list(_blocks(out[i]))
        for j, block in enumerate(content):
            content[j] = replaced.get((i, j), block)
        out[i] = cast(Message, {**out[i], "content": content})
    return out, {"type": CLEAR_TOOL_USES_EDIT, "cleared_tool_uses": len(candidates)}


def compacted_body(body: Mapping[str, Any], block: Mapping[str, Any]) -> dict[str, Any]:
    """`body` as the model reads it right after the server compacted it into `block`."""
    return {**body, "messages": [{"role": "assistant", "content": [dict(block)]}]}


def simulated_compaction(
    body: Mapping[str, Any], view: ServerView, *, count: TokenCount | None = None
) -> tuple[CompactionBlock, Usage]:
    """The compaction block the server would write for `view`, and what it billed for it (in
    the `compaction_*` fields of the `Usage`; the summary request reads the whole view).

    The summary is extractive: the head of every user text and tool result (the first one
    always, then the latest ones that fit `SUMMARY_MAX_TOKENS`) and the tails of the last
    assistant texts. Of the `<key_facts>` the instructions list, only those that happen to be
    in that text are named again."""
    count = count or _same
    edit = compaction_edit(body) or {}
    instructions = edit.get("instructions")
    prompt = instructions if isinstance(instructions, str) and instructions else None
    text = extractive_summary(view.messages, prompt)
    usage = Usage(
        compaction_input_tokens=view.input_tokens
        + count(estimate_text_tokens(prompt or DEFAULT_INSTRUCTIONS)),
        compaction_output_tokens=count(estimate_text_tokens(text)),
    )
    return {"type": "compaction", "content": text}, usage


def with_cache_split(usage: Usage, cached: CacheUsage) -> Usage:
    """The compaction iteration's input of `usage` split as the prompt cache split the view
    it re-read (`cached`, from `PrefixCache.usage_for` on the view)."""
    total = usage.compaction_input_tokens
    read = min(cached.cache_read_input_tokens, total)
    written = min(cached.cache_creation_input_tokens, total - read)
    return usage.model_copy(
        update={
            "compaction_input_tokens": total - read - written,
            "compaction_cache_read_input_tokens": read,
            "compaction_cache_creation_input_tokens": written,
        }
    )


_COMPACTION_COUNTS = (
    "compaction_input_tokens",
    "compaction_cache_creation_input_tokens",
    "compaction_cache_read_input_tokens",
    "compaction_output_tokens",
)


@dataclass(frozen=True)
class ServerTurn:
    """What the server does with one request before the model answers it."""

    body: dict[str, Any]
    """What the model answers from: the view, or right after a compaction the block alone."""
    compaction: CompactionBlock | None = None
    """The block the server wrote, which starts the reply."""
    compaction_usage: Usage | None = None
    """The compaction's own iteration, its input split as the prompt cache served it."""
    pause: bool = False
    """Under `pause_after_compaction`: the reply is the block alone, `stop_reason` compaction."""
    context_management: dict[str, Any] | None = None
    """The reply's `context_management` report; None when the request declared no edits."""

    def usage(self, message: Usage | None) -> Usage:
        """The reply's usage: the model's (`message`; None under a pause, all zero) with the
        compaction's in its `compaction_*` fields."""
        total = message or Usage()
        if self.compaction_usage is None:
            return total
        spent = self.compaction_usage
        return total.model_copy(update={k: getattr(spent, k) for k in _COMPACTION_COUNTS})


def play_turn(
    body: Mapping[str, Any],
    view: ServerView,
    *,
    cache: PrefixCache,
    namespace: str,
    count: TokenCount | None = None,
    cached: Callable[[CacheUsage], CacheUsage] | None = None,
    seal: Callable[[CompactionBlock], CompactionBlock] | None = None,
) -> ServerTurn:
    """The server's part of answering `body` (read as `view`): compaction when it is due, its
    summary request billed through `cache` (under `namespace`, its split put in the model's
    tokens by `cached`), the block finished by `seal` (the stand-in signs it)."""
    seen = {**body, "messages": view.messages}
    managed = {"applied_edits": view.applied_edits} if uses_server_edits(body) else None
    if not view.compaction_due:
        return ServerTurn(seen, context_management=managed)
    block, usage = simulated_compaction(body, view, count=count)
    split = cache.usage_for(seen, namespace)
    usage = with_cache_split(usage, cached(split) if cached is not None else split)
    if seal is not None:
        block = seal(block)
    pause = (compaction_edit(body) or {}).get("pause_after_compaction") is True
    return ServerTurn(compacted_body(body, block), block, usage, pause, managed)
