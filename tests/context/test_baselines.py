"""The two yardsticks a policy is measured against: per-turn stripping stubs every tool result
but the newest N steps' and keeps the assistant text; keep-all shows every step whole."""

from __future__ import annotations

from typing import Any

from ctx_factories import SYSTEM, TOOLS, assert_valid, tool_step

from baton.context.baselines import STUB, KeepAll, PerTurnStrip
from baton.context.conversation import Conversation
from baton.context.payload import Payload
from baton.context.strategy import ContextBudget


def _budget() -> ContextBudget:
    return ContextBudget(
        context_window=400_000,
        compact_threshold=200_000,
        keep_recent_steps=2,
        max_output_tokens=1000,
    )


def _blocks(payload: Payload, role: str, kind: str) -> list[dict[str, Any]]:
    """The `kind` blocks of the payload's `role` messages, in order."""
    found: list[dict[str, Any]] = []
    for message in payload["messages"]:
        content: Any = message["content"]
        if message["role"] == role and isinstance(content, list):
            found += [dict(block) for block in content if block.get("type") == kind]
    return found


def _results(payload: Payload) -> list[Any]:
    return [block["content"] for block in _blocks(payload, "user", "tool_result")]


def _result(n: int) -> str:
    return f"result {n}: " + "x" * 200


def _conversation(steps: int) -> Conversation:
    conversation = Conversation()
    conversation.start_round("Design the scenario.")
    for n in range(steps):
        tool_step(conversation, text=f"Step {n}.", result_text=_result(n))
    return conversation


def test_per_turn_strip_stubs_all_but_the_newest_steps_results() -> None:
    """Five steps, N = 2: the three oldest results are stubs, the two newest whole, and every
    step's assistant text is still there."""
    payload = PerTurnStrip(_budget()).compose_payload(SYSTEM, TOOLS, _conversation(5))
    assert_valid(payload)
    results = _results(payload)
    assert [STUB, STUB, STUB] == results[:3]
    assert [_result(3), _result(4)] == results[3:]
    texts = [block["text"] for block in _blocks(payload, "assistant", "text")]
    assert [f"Step {n}." for n in range(5)] == texts


def test_keep_all_shows_every_step_whole() -> None:
    """Below the threshold nothing is stripped: every tool result goes back whole."""
    payload = KeepAll(_budget()).compose_payload(SYSTEM, TOOLS, _conversation(5))
    assert_valid(payload)
    assert [_result(n) for n in range(5)] == _results(payload)
