"""What an agent takes (`Prompt`, `ResumeRound`), and how its conversations are named.

A conversation is `main` or belongs to a scenario: `<scenario>` for its first run,
`<scenario>@<run>` for a later one, so each run starts with a fresh history while its files
stay in the scenario's folder (docs/architecture.md, "agents/").
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

MAIN = "main"
"""The conversation of prompts that belong to no scenario: the context's own default,
`MAIN_CONVERSATION`, named here too so that reading a message loads no context code (the
context knows no agent; tests/agents/test_messages.py holds the two equal)."""

RUN_SEPARATOR = "@"
"""Scenario names never contain it, so `scenario@run` conversation ids are unambiguous."""


def scenario_conversation(scenario: str, run: int) -> str:
    """The conversation id of a scenario's `run`-th submission: fresh history per run."""
    return scenario if run <= 1 else f"{scenario}{RUN_SEPARATOR}{run}"


def scenario_of(conversation: str) -> str:
    """The scenario a conversation id belongs to."""
    return conversation.partition(RUN_SEPARATOR)[0]


class Prompt(BaseModel):
    """Start a round with this text; asked, the reply is the final assistant text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(min_length=1)


class ResumeRound(BaseModel):
    """Sent by an agent to itself on start for each round a crash left unfinished."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    conversation: str
