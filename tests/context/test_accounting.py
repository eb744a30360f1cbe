"""Token accounting: exact figures from usage, calibrated estimates for what is new."""

from __future__ import annotations

import pytest
from ctx_factories import SYSTEM, TOOLS, tool_step

import baton.context.conversation as conversation_module
from baton.context.accounting import MAX_RATIO, MIN_RATIO, Calibration, TokenAccount
from baton.context.conversation import Conversation
from baton.context.summarize import SummarizeStrategy
from baton.context.tokens import estimate_message_tokens, estimate_payload_tokens
from baton.context.usage import Usage


def test_context_is_last_usage_plus_estimate_of_what_came_since() -> None:
    """All four usage fields, plus the estimate of the tool results appended (docs/context.md,
    "Token accounting")."""
    conversation = Conversation()
    conversation.start_round("go")
    usage = {
        "input_tokens": 1000,
        "cache_creation_input_tokens": 200,
        "cache_read_input_tokens": 3000,
        "output_tokens": 50,
    }
    record = tool_step(conversation, tools=1, result_chars=3200, usage=usage)
    results = conversation.entries[-1].results
    assert results is not None
    assert record.step.usage is not None
    assert 4250 + estimate_message_tokens(results) == conversation.context_tokens


def test_a_new_round_adds_its_input_estimate() -> None:
    """A user input arriving after the call is estimated and added."""
    conversation = Conversation()
    conversation.start_round("go")
    tool_step(conversation, tools=0, text="done", usage={"input_tokens": 100, "output_tokens": 5})
    conversation.start_round("下一轮需求：生成样本")
    assert 105 + conversation.round_entries[-1].tokens == conversation.context_tokens


def test_without_usage_the_context_is_the_estimate_of_the_payload() -> None:
    """Before any call reports usage, the composed payload's estimate is the context."""
    conversation = Conversation()
    conversation.start_round("go")
    tool_step(conversation, tools=1, result_chars=500)
    payload = SummarizeStrategy().compose_payload(SYSTEM, TOOLS, conversation)
    assert estimate_payload_tokens(payload) == conversation.context_tokens


def test_usage_calibrates_the_estimate_of_later_additions() -> None:
    """When the API counts twice our estimate, later estimates are doubled too."""
    conversation = Conversation()
    conversation.start_round("go")
    payload = SummarizeStrategy().compose_payload(SYSTEM, TOOLS, conversation)
    sent = estimate_payload_tokens(payload)
    tool_step(conversation, tools=1, result_chars=640, usage={"input_tokens": 2 * sent})
    results = conversation.entries[-1].results
    assert results is not None
    assert 2.0 == conversation.account.calibration.ratio
    assert 2 * sent + 2 * estimate_message_tokens(results) == conversation.context_tokens


def test_calibration_smooths_and_clamps() -> None:
    """One odd call moves the ratio part way; absurd ratios are clamped."""
    calibration = Calibration()
    calibration.observe(100, 100)
    calibration.observe(200, 100)
    assert pytest.approx(1.3) == calibration.ratio
    wild = Calibration()
    wild.observe(1000, 1)
    assert MAX_RATIO == wild.ratio
    low = Calibration()
    low.observe(1, 1000)
    assert MIN_RATIO == low.ratio
    assert 0 == low.apply(0)


def test_reset_makes_the_context_an_estimate_until_the_next_call() -> None:
    """After a compaction the size is the compacted estimate, then usage takes over again."""
    account = TokenAccount()
    account.observe(Usage(input_tokens=5000, output_tokens=10))
    account.reset(1200)
    assert (1200, False) == (account.context_tokens, account.exact)
    account.observe(Usage(input_tokens=1300, output_tokens=20))
    assert (1320, True) == (account.context_tokens, account.exact)


def test_a_turn_estimates_only_what_is_new(monkeypatch: pytest.MonkeyPatch) -> None:
    """Appending a step to a long conversation estimates that step, not the history."""
    conversation = Conversation()
    strategy = SummarizeStrategy()
    conversation.start_round("go")
    for _ in range(300):
        tool_step(conversation, tools=1, result_chars=50)
        strategy.on_turn_complete(conversation)
    calls = 0
    real = conversation_module.estimate_message_tokens

    def counting(message: object) -> int:
        nonlocal calls
        calls += 1
        return real(message)

    monkeypatch.setattr(conversation_module, "estimate_message_tokens", counting)
    tool_step(conversation, tools=1, result_chars=50)
    strategy.on_turn_complete(conversation)
    strategy.should_compact(conversation)
    assert 3 == calls  # the assistant message, its results, its history form
