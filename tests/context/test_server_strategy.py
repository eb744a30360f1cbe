"""`strategy = "server"` and `tool_result_clearing = "server"`: the edits each request asks for,
the server's compaction block applied and replayed, and the key facts it lacked carried."""

from __future__ import annotations

from typing import Any

import pytest
from ctx_factories import SYSTEM, TOOLS, assert_valid, tool_step

from baton.context.conversation import Conversation
from baton.context.edit_requests import cleared_tokens
from baton.context.ledger import id_facts, path_facts
from baton.context.payload import Payload
from baton.context.records import RoundStarted, StepAppended, dump_record
from baton.context.server import ServerStrategy
from baton.context.server_edits import (
    CLEAR_TOOL_USES_EDIT,
    COMPACT_BETA,
    COMPACT_EDIT,
    CONTEXT_MANAGEMENT_BETA,
)
from baton.context.strategy import ContextBudget
from baton.context.summarize import SummarizeStrategy
from baton.context.usage import Usage
from baton.errors import UsageError


def _budget(**overrides: Any) -> ContextBudget:
    values: dict[str, Any] = {
        "context_window": 400_000,
        "compact_threshold": 60_000,
        "keep_recent_steps": 2,
        "max_output_tokens": 1000,
    }
    return ContextBudget(**{**values, **overrides})


def _edits(payload: Payload) -> dict[str, dict[str, Any]]:
    return {edit["type"]: edit for edit in payload["context_management"]["edits"]}


def _valid(payload: Payload) -> None:
    # `betas` travel as a header, never in the body the checker sees.
    assert_valid({k: v for k, v in payload.items() if k != "betas"})  # type: ignore[arg-type]


def _block(text: str) -> dict[str, Any]:
    return {"type": "compaction", "content": text, "signature": "sig-1", "encrypted_content": "e"}


def _conversation(steps: int = 5, chars: int = 4000) -> Conversation:
    conversation = Conversation()
    conversation.start_round("Design the scenario leave-approval.")
    for _ in range(steps):
        tool_step(conversation, result_chars=chars)
    return conversation


def test_every_turn_asks_for_a_paused_compaction_at_the_threshold() -> None:
    """The compact edit carries the threshold, the compact prompt, the ledger and a pause."""
    strategy = ServerStrategy(_budget(), compact_prompt="Summarize the work.")
    conversation = _conversation(2)
    conversation.register_facts(id_facts(["REQ-4411"]))
    payload = strategy.compose_payload(SYSTEM, TOOLS, conversation)
    edit = _edits(payload)[COMPACT_EDIT]
    assert {"type": "input_tokens", "value": 60_000} == edit["trigger"]
    assert edit["pause_after_compaction"] is True
    assert edit["instructions"].startswith("Summarize the work.")
    assert "- REQ-4411" in edit["instructions"]
    assert [COMPACT_BETA] == payload["betas"]
    _valid(payload)


def test_server_clearing_shows_every_result_and_asks_the_server_to_clear() -> None:
    """`tool_result_clearing = "server"`: no step is stripped here; the edit clears in batches."""
    budget = _budget(compact_threshold=200_000)
    client = SummarizeStrategy(budget, stride=1)
    server = SummarizeStrategy(budget, stride=1, tool_result_clearing="server")
    conversation = _conversation(6)
    stripped = client.compose_payload(SYSTEM, TOOLS, conversation)
    whole = server.compose_payload(SYSTEM, TOOLS, conversation)
    results = sum(
        1
        for m in whole["messages"]
        for b in m["content"]
        if b["type"] == "tool_result" and b["content"] == "r" * 4000
    )
    assert 6 == results
    assert "context_management" not in stripped
    edit = _edits(whole)[CLEAR_TOOL_USES_EDIT]
    assert {"type": "tool_uses", "value": 2} == edit["keep"]
    assert {"type": "input_tokens", "value": 50_000} == edit["clear_at_least"]
    assert [CONTEXT_MANAGEMENT_BETA] == whole["betas"]
    _valid(whole)


def test_both_edits_need_both_betas() -> None:
    """Server compaction with server clearing sends both edits and both betas."""
    strategy = ServerStrategy(_budget(), tool_result_clearing="server")
    payload = strategy.compose_payload(SYSTEM, TOOLS, _conversation(2))
    assert {COMPACT_EDIT, CLEAR_TOOL_USES_EDIT} == set(_edits(payload))
    assert sorted([COMPACT_BETA, CONTEXT_MANAGEMENT_BETA]) == payload["betas"]


def test_the_block_replaces_the_history_and_the_recent_steps_stay_whole() -> None:
    """After the block come the last N steps, their round's input in front; nothing older."""
    strategy = ServerStrategy(_budget())
    conversation = _conversation(5)
    strategy.compose_payload(SYSTEM, TOOLS, conversation)
    usage = Usage(compaction_input_tokens=61_000, compaction_output_tokens=900)
    record = strategy.server_compacted(conversation, _block("The work so far."), usage, started=0)
    assert record is not None
    assert ("server", 2, 61_000, 900) == (
        record.by,
        record.kept_steps,
        record.server_input_tokens,
        record.server_output_tokens,
    )
    payload = strategy.compose_payload(SYSTEM, TOOLS, conversation)
    messages = payload["messages"]
    assert "user" == messages[0]["role"]
    first = messages[1]["content"][0]
    assert ("compaction", "The work so far.", "sig-1") == (
        first["type"],
        first["content"],  # type: ignore[typeddict-item]
        first["signature"],  # type: ignore[typeddict-item]
    )
    uses = [b for m in messages for b in m["content"] if b["type"] == "tool_use"]
    assert 2 == len(uses)
    _valid(payload)


def test_a_resumed_conversation_sends_the_same_block() -> None:
    """The journaled record rebuilds the conversation: the next request is the same."""
    strategy = ServerStrategy(_budget())
    conversation = _conversation(4)
    conversation_records = [dump_record(r) for r in _replayable(conversation)]
    strategy.compose_payload(SYSTEM, TOOLS, conversation)
    record = strategy.server_compacted(conversation, _block("Summary."), Usage(), started=0)
    assert record is not None
    records = [*conversation_records, dump_record(record)]
    live = strategy.compose_payload(SYSTEM, TOOLS, conversation)
    resumed = Conversation.replay(records)
    again = ServerStrategy(_budget()).compose_payload(SYSTEM, TOOLS, resumed)
    assert live["messages"] == again["messages"]


def _replayable(conversation: Conversation) -> list[Any]:
    """The records that built `conversation` (rounds and steps), as its journal holds them."""
    out: list[Any] = []
    for index, round_ in enumerate(conversation.rounds):
        out.append(RoundStarted(round=index, text=round_.user))
        out.extend(StepAppended(step=step) for step in round_.steps)
    return out


def test_facts_the_block_lacks_are_carried_beside_it() -> None:
    """A key fact the server's summary does not spell out is shown in a `<key_facts>` note."""
    strategy = ServerStrategy(_budget())
    conversation = _conversation(4)
    conversation.register_facts(
        [*id_facts(["REQ-4411", "sha-9f2c1e7"]), *path_facts(["scenarios/leave/plan.md"])]
    )
    strategy.compose_payload(SYSTEM, TOOLS, conversation)
    record = strategy.server_compacted(
        conversation, _block("Kept REQ-4411 and scenarios/leave/plan.md."), Usage(), started=0
    )
    assert record is not None
    assert 1 == record.facts_carried
    payload = strategy.compose_payload(SYSTEM, TOOLS, conversation)
    note = payload["messages"][2]["content"][0]
    assert "text" == note["type"]
    assert "<key_facts>" in note["text"]  # type: ignore[typeddict-item]
    assert "sha-9f2c1e7" in note["text"]  # type: ignore[typeddict-item]
    assert "REQ-4411" not in note["text"]  # type: ignore[typeddict-item]
    _valid(payload)


def test_a_block_without_a_summary_changes_nothing() -> None:
    """A failed server compaction (null content) leaves the conversation as it was."""
    strategy = ServerStrategy(_budget())
    conversation = _conversation(3)
    before = len(conversation.entries)
    block = {"type": "compaction", "content": None}
    assert strategy.server_compacted(conversation, block, Usage(), started=0) is None
    assert before == len(conversation.entries)
    assert conversation.summary is None


def test_the_strategy_never_compacts_by_itself() -> None:
    """Past the threshold the server compacts; the strategy does not ask for a summary."""
    strategy = ServerStrategy(_budget())
    conversation = _conversation(30, chars=10_000)
    assert conversation.context_tokens > 60_000
    assert not strategy.should_compact(conversation)


def test_a_threshold_below_the_api_minimum_is_refused() -> None:
    """The API compacts at 50,000 input tokens at the least: a lower threshold is an error."""
    with pytest.raises(UsageError, match="50,000"):
        ServerStrategy(_budget(compact_threshold=40_000))


def test_a_summary_request_of_its_own_declares_the_edit_past_the_window() -> None:
    """Overflowed anyway: baton's own summary request still declares the compact edit (a
    block in its history needs it), triggered past the window so the server leaves it."""
    strategy = ServerStrategy(_budget())
    conversation = _conversation(3)
    payload = strategy.compaction_payload(conversation)
    assert {"type": "input_tokens", "value": 400_000} == _edits(payload)[COMPACT_EDIT]["trigger"]


def test_cleared_tokens_sums_the_applied_edits() -> None:
    """What the server's clearing took off is read from `applied_edits`."""
    assert 0 == cleared_tokens(None)
    edits = {
        "applied_edits": [
            {
                "type": "clear_tool_uses_20250919",
                "cleared_tool_uses": 3,
                "cleared_input_tokens": 900,
            },
            {"type": "clear_thinking_20251015", "cleared_input_tokens": 100},
        ]
    }
    assert 1000 == cleared_tokens(edits)
