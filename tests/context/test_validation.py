"""The Messages API validity checker: one test per documented rule."""

from __future__ import annotations

from typing import Any

import pytest

from baton.context.errors import InvalidRequestError
from baton.context.validation import check_request, validate_request


def _use(tool_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": "Read", "input": {}}


def _result(tool_id: str, **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": "ok", **extra}


def _text(text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": text, **extra}


def _problems(messages: list[dict[str, Any]], **body: Any) -> list[str]:
    request = {"max_tokens": 10, "messages": messages, **body}
    return validate_request(request, require_model=False, strict_alternation=True)


def test_a_well_formed_tool_round_trip_passes() -> None:
    """user → assistant(tool_use) → user(tool_result first, then text) is valid."""
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [_text("reading"), _use("a"), _use("b")]},
        {"role": "user", "content": [_result("a"), _result("b"), _text("and?")]},
    ]
    assert [] == _problems(messages)


@pytest.mark.parametrize(
    ("messages", "needle"),
    [
        ([{"role": "assistant", "content": "hi"}], "first message must use the user role"),
        (
            [{"role": "user", "content": "go"}, {"role": "assistant", "content": [_use("a")]}],
            "without tool_result",
        ),
        (
            [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [_use("a")]},
                {"role": "user", "content": [_text(), _result("a")]},
            ],
            "must come first",
        ),
        (
            [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [_use("a")]},
                {"role": "user", "content": [_result("a")]},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": [_result("a")]},
            ],
            "corresponding `tool_use` block in the previous message",
        ),
        ([{"role": "user", "content": [_text("  ")]}], "non-whitespace text"),
        ([{"role": "user", "content": ""}], "non-empty content"),
        ([{"role": "tool", "content": "x"}], "Input should be 'user' or 'assistant'"),
        (
            [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
            "roles must alternate",
        ),
        (
            [{"role": "user", "content": [_text(cache_control={"type": "persistent"})]}],
            "cache_control: must be",
        ),
    ],
)
def test_each_broken_rule_is_reported(messages: list[dict[str, Any]], needle: str) -> None:
    """First message user; tool_use answered next; results first; no orphan result; no blank."""
    problems = _problems(messages)
    assert any(needle in p for p in problems), problems


def test_more_than_four_breakpoints_counting_inside_tool_results() -> None:
    """cache_control on a text block inside a tool_result counts towards the four."""
    mark = {"cache_control": {"type": "ephemeral"}}
    nested = {"type": "tool_result", "tool_use_id": "a", "content": [_text("x", **mark)]}
    messages = [
        {"role": "user", "content": [_text("a", **mark), _text("b", **mark), _text("z", **mark)]},
        {"role": "assistant", "content": [_text("c", **mark), _use("a")]},
        {"role": "user", "content": [nested]},
    ]
    assert any("maximum of 4" in p for p in _problems(messages))
    messages[0]["content"] = [_text("a"), _text("b", **mark)]
    assert [] == _problems(messages)


def test_check_request_raises_with_every_problem() -> None:
    """The raising form lists each broken rule."""
    with pytest.raises(InvalidRequestError, match="model: Field required") as info:
        check_request({"max_tokens": 0, "messages": []})
    assert 3 == len(info.value.problems)


def test_sampling_parameters_and_unknown_fields_are_refused() -> None:
    """API 2026-10-21 answers temperature/top_p/top_k (even at defaults) and unknown fields
    with a 400, so the checker does too."""
    body = {
        "model": "m",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 1.0,
        "top_k": 5,
        "colour": "blue",
    }
    problems = validate_request(body)
    assert 3 == len(problems)
    assert any(p.startswith("temperature: Extra inputs are not permitted") for p in problems)
    assert "colour: Extra inputs are not permitted" in problems


def test_a_compaction_block_is_an_assistant_block_that_may_open_the_request() -> None:
    """The server's compaction block (with `context_management`) passes in an assistant
    message, even as the first message; in a user message, or with a non-string summary, it
    is refused."""
    block = {"type": "compaction", "content": "summary", "encrypted_content": None}
    opened = [{"role": "assistant", "content": [block]}, {"role": "user", "content": "go"}]
    assert [] == _problems(opened, context_management={"edits": []})
    assert [
        "messages.0.content.0: compaction blocks may only appear in assistant messages",
        "messages.0.content.0.content: Input should be a valid string",
    ] == _problems([{"role": "user", "content": [{**block, "content": 3}]}])
