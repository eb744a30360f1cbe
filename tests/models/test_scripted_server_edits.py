"""ScriptedModel plays server-side context management as the stand-in does: a compaction
pause takes no script turn, clearing and compaction show in the usage, the checks of the
edits hold offline, and the same request gets the same block and figures from both."""

from __future__ import annotations

from typing import Any

import pytest

from baton.context.errors import InvalidRequestError
from baton.context.payload import Payload
from baton.context.server_edits import (
    CLEAR_TOOL_USES_EDIT,
    COMPACT_BETA,
    COMPACT_EDIT,
    CONTEXT_MANAGEMENT_BETA,
)
from baton.context.tokens import estimate_payload_tokens
from baton.models.protocol import CallContext, ModelResponse, bind_call
from baton.models.scripted import ScriptedModel
from baton.testing import MessagesAPIStandIn, StandInModel
from tests.testing.test_standin_context import history

BETAS = [COMPACT_BETA, CONTEXT_MANAGEMENT_BETA]


def managed(messages: list[Any], *edits: dict[str, Any], **extra: Any) -> Payload:
    payload: Any = {
        "max_tokens": 1024,
        "messages": messages,
        "tools": [
            {"name": "Read", "description": "Read a part.", "input_schema": {"type": "object"}}
        ],
        "betas": BETAS,
        "context_management": {"edits": list(edits)},
        **extra,
    }
    return payload


def compact(pause: bool = False) -> dict[str, Any]:
    trigger = {"type": "input_tokens", "value": 50_000}
    return {"type": COMPACT_EDIT, "trigger": trigger, "pause_after_compaction": pause}


async def call(model: ScriptedModel, payload: Payload, turn: int) -> ModelResponse:
    with bind_call(CallContext(actor="execute", turn=turn)):
        return await model.create(payload)


async def test_a_compaction_pause_takes_no_script_turn() -> None:
    """Past the trigger with a pause, turn 0 gets the compaction block alone; the request
    that sends it back at turn 0 gets the script's first reply, turn 1 its second."""
    model = ScriptedModel({"actors": {"execute": ["first", "second"]}})
    messages = history(60)
    paused = await call(model, managed(messages, compact(pause=True)), 0)
    assert paused.compaction is not None
    after = [*messages, {"role": "assistant", "content": paused.content}]
    resumed = await call(model, managed(after, compact(pause=True)), 0)
    later = await call(model, managed([*after, {"role": "user", "content": "more"}], compact()), 1)
    assert ("compaction", ["compaction"]) == (
        paused.stop_reason,
        [b["type"] for b in paused.content],
    )
    assert ["first", "second"] == [resumed.text, later.text]
    assert (0, 0) == (paused.usage.input_tokens, paused.usage.output_tokens)
    assert 50_000 < paused.usage.compaction_input_tokens
    view = {"tools": managed([])["tools"], "messages": [after[-1]]}
    assert estimate_payload_tokens(view) == resumed.usage.input_tokens


async def test_without_a_pause_the_script_answers_from_the_block() -> None:
    """Without a pause the reply is the block then the scripted turn, which the policy
    answers reading the block alone; the compaction's usage rides along."""
    seen: list[Any] = []

    def policy(payload: Payload, context: CallContext) -> str:
        seen.append(payload["messages"])
        return "from the summary"

    model = ScriptedModel(policy=policy)
    reply = await call(model, managed(history(60), compact()), 0)
    assert ["compaction", "text"] == [b["type"] for b in reply.content]
    assert [[{"role": "assistant", "content": [reply.compaction]}]] == seen
    assert 0 < reply.usage.compaction_output_tokens
    assert 0 < reply.usage.input_tokens
    assert {"applied_edits": []} == reply.context_management


async def test_clearing_shrinks_the_billed_input_and_is_reported() -> None:
    """clear_tool_uses past its trigger: the input billed and counted is the cleared one."""
    edit = {"type": CLEAR_TOOL_USES_EDIT, "trigger": {"type": "input_tokens", "value": 5000}}
    model = ScriptedModel(policy=lambda payload, context: "ok")
    payload = managed(history(20), edit)
    reply = await call(model, payload, 0)
    ((applied),) = (reply.context_management or {})["applied_edits"]
    whole = estimate_payload_tokens({**payload, "context_management": None})
    assert whole - applied["cleared_input_tokens"] == reply.usage.input_tokens
    assert reply.usage.input_tokens == await model.count_tokens(payload)


async def test_the_edits_are_checked_offline_as_online() -> None:
    """An edit without its beta, or a compaction block without the compact edit, is an
    InvalidRequestError offline too."""
    model = ScriptedModel(policy=lambda payload, context: "ok")
    with pytest.raises(InvalidRequestError, match="requires the beta 'compact-2026-01-12'"):
        await call(model, managed(history(1), compact(), betas=[CONTEXT_MANAGEMENT_BETA]), 0)
    block = {"type": "compaction", "content": "summary"}
    undeclared: Any = {
        "max_tokens": 64,
        "messages": [{"role": "assistant", "content": [block]}, {"role": "user", "content": "go"}],
    }
    with pytest.raises(InvalidRequestError, match="must declare the 'compact_20260112' edit"):
        await call(model, undeclared, 0)


async def test_the_offline_model_and_the_stand_in_play_a_request_alike() -> None:
    """The same request, past its trigger, gets the same compaction block text, compaction
    usage and output offline and from the stand-in (a model whose tokenizer is the
    estimator's)."""
    row = StandInModel(
        id="claude-opus-4-6",
        display_name="Claude Opus 4.6",
        max_input_tokens=1_000_000,
        max_tokens=64_000,
    )
    payload = managed(history(60), compact())
    offline = await call(ScriptedModel(policy=lambda payload, context: "same"), payload, 0)
    async with MessagesAPIStandIn(models={row.id: row}) as api, api.model(row.id) as model:
        api.reply("same")
        online = await model.create(payload)
    assert offline.compaction is not None
    assert online.compaction is not None
    assert offline.compaction["content"] == online.compaction["content"]
    # The stand-in's block also carries its signature, which the next input counts.
    sealed = {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}
    assert offline.usage.model_dump(exclude=sealed) == online.usage.model_dump(exclude=sealed)
