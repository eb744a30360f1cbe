"""The agents' name for the conversation of prompts outside any scenario."""

from __future__ import annotations

from baton.agents.messages import MAIN
from baton.context.conversation import MAIN_CONVERSATION


def test_the_main_conversation_is_the_contexts_default() -> None:
    """`MAIN`, named in the agents so that reading a message loads no context code, is the
    context's own default conversation id."""
    assert MAIN_CONVERSATION == MAIN
