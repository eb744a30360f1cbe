"""The server-side context edits each model takes: from its id, from the Models API's
capabilities, and the request check that names an edit the model lacks."""

from __future__ import annotations

from typing import Any

import pytest

from baton.context.server_edits import CLEAR_THINKING_EDIT, CLEAR_TOOL_USES_EDIT, COMPACT_EDIT
from baton.models.rules import CONTEXT_EDITS, request_problems, rules_for

CLEARING = frozenset({CLEAR_THINKING_EDIT, CLEAR_TOOL_USES_EDIT})


@pytest.mark.parametrize(
    ("model", "edits"),
    [
        ("claude-opus-5-5", CONTEXT_EDITS),
        ("claude-sonnet-4-6", CONTEXT_EDITS),
        ("claude-haiku-4-5", CLEARING),
        ("claude-opus-4-1", CLEARING),
        ("claude-sonnet-3-7", frozenset()),
        ("a-proxy-model", CONTEXT_EDITS),
    ],
)
def test_the_edits_a_model_takes_come_from_its_generation(
    model: str, edits: frozenset[str]
) -> None:
    """All three from the 4.6 generation on, the two clearing edits on other 4.x models, none
    before; an id of no known shape is not second-guessed."""
    assert edits == rules_for(model).context_edits


def test_the_models_api_capabilities_decide_over_the_id() -> None:
    """Per-edit support reported by the Models API wins; an edit it does not mention keeps
    what the id says; `supported: false` for the whole group takes them all away."""
    rules = rules_for("claude-haiku-4-5")
    reported = {"context_management": {"supported": True, COMPACT_EDIT: {"supported": True}}}
    assert CONTEXT_EDITS == rules.with_capabilities(reported).context_edits
    refused = {
        "context_management": {"supported": True, CLEAR_TOOL_USES_EDIT: {"supported": False}}
    }
    assert {CLEAR_THINKING_EDIT} == rules.with_capabilities(refused).context_edits
    off = {"context_management": {"supported": False, COMPACT_EDIT: {"supported": True}}}
    assert frozenset() == rules.with_capabilities(off).context_edits


def test_a_request_naming_an_edit_the_model_lacks_says_what_to_set() -> None:
    """Each edit the model lacks is one problem naming the model and the setting to change."""
    body: Any = {
        "max_tokens": 1,
        "messages": [{"role": "user", "content": "go"}],
        "context_management": {"edits": [{"type": CLEAR_TOOL_USES_EDIT}, {"type": COMPACT_EDIT}]},
    }
    rules = rules_for("claude-opus-5-5").model_copy(update={"context_edits": frozenset()})
    assert [
        "context_management.edits.0: claude-opus-5-5 does not support clear_tool_uses_20250919; "
        'set tool_result_clearing = "client" in [actors.<name>]',
        "context_management.edits.1: claude-opus-5-5 does not support compact_20260112; "
        'set strategy = "summarize" in [actors.<name>]',
    ] == request_problems(body, rules)
    assert [] == request_problems(body, rules_for("claude-opus-5-5"))


def test_continuing_after_a_compaction_pause_is_no_prefill() -> None:
    """A request ending with the assistant's compaction block is a continuation, which the
    5.x models take; ending with assistant text is still a refused prefill."""
    rules = rules_for("claude-opus-5-5")
    ask: Any = {"role": "user", "content": "go"}
    block = {"type": "compaction", "content": "summary"}
    continued: Any = {"max_tokens": 1, "messages": [ask, {"role": "assistant", "content": [block]}]}
    prefilled: Any = {"max_tokens": 1, "messages": [ask, {"role": "assistant", "content": "Sure"}]}
    assert [] == request_problems(continued, rules)
    assert 1 == len(request_problems(prefilled, rules))
