"""Rounds and steps (docs/context.md, "Rounds and steps") as pydantic models, and how one
step renders to messages.

A `Step` is one assistant message plus the `tool_result` blocks answering its `tool_use`
blocks, plus the usage of the call that produced it. The Messages API has no `tool` role:
the results are `tool_result` blocks at the head of a `user` message, the only shape it
accepts (docs/context.md, "From steps to a request").
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from baton.context.payload import ContentBlock, Message, TextBlock, ToolResultBlock
from baton.context.usage import Usage
from baton.errors import UsageError


class _Block(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class TextContent(_Block):
    """A text block of an assistant message (or inside a tool result)."""

    type: Literal["text"] = "text"
    text: str


class ToolUseContent(_Block):
    """A tool call the model made."""

    type: Literal["tool_use"] = "tool_use"
    id: str = Field(pattern=r"^[a-zA-Z0-9_-]+$")
    name: str = Field(min_length=1)
    input: dict[str, Any] = Field(default_factory=dict)


class ToolResultContent(_Block):
    """The answer to one `tool_use`: text (or text blocks), flagged when the tool failed."""

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str | list[TextContent] = ""
    is_error: bool = False

    @property
    def text(self) -> str:
        """The result as one string, whatever shape it was given in."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(block.text for block in self.content)


class ThinkingContent(BaseModel):
    """A thinking block, kept exactly as the API returned it (its text may be empty)."""

    # Unknown fields are kept too: the block goes back to the API as it came.
    model_config = ConfigDict(frozen=True, extra="allow")

    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str


class RedactedThinkingContent(BaseModel):
    """A redacted thinking block: opaque `data`, kept exactly as the API returned it."""

    model_config = ConfigDict(frozen=True, extra="allow")

    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


AnyThinking = ThinkingContent | RedactedThinkingContent
AssistantContent = Annotated[
    TextContent | ToolUseContent | ThinkingContent | RedactedThinkingContent,
    Field(discriminator="type"),
]


class StepLayout(BaseModel):
    """How the request a step answers laid out the history before the current round.

    A strategy decides it per request; while a round carries thinking blocks every later
    request of the round reuses the layout of its first thinking step, so the blocks are sent
    back behind the same prefix they were produced after (docs/models.md, "Thinking").
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    first_whole: int = Field(
        ge=0, description="seq of the oldest step shown whole (or folded up to)"
    )
    facts: int = Field(0, ge=0, description="key facts of the ledger the request showed")


class Step(BaseModel):
    """One model call's answer: the assistant blocks, the tool results, the call's usage."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int = Field(ge=0, description="position in the conversation, counted from 0, never reused")
    content: list[AssistantContent] = Field(default_factory=list)
    results: list[ToolResultContent] = Field(default_factory=list)
    usage: Usage | None = None
    stop_reason: str | None = None
    # The raw estimate of the payload this step answers. The live call calibrated the token
    # estimator with it against `usage`; a replay must too, or a resumed conversation sizes
    # itself differently and compacts at other points than the uninterrupted one would.
    sent_estimate: int | None = Field(None, ge=0)
    layout: StepLayout | None = None

    @property
    def tool_uses(self) -> list[ToolUseContent]:
        """The tool calls of this step, in order."""
        return [block for block in self.content if isinstance(block, ToolUseContent)]

    @property
    def has_tool_use(self) -> bool:
        """Whether the model asked for tools, so the round goes on after this step."""
        return any(isinstance(block, ToolUseContent) for block in self.content)

    @property
    def text(self) -> str:
        """The assistant's text in this step (empty when it only called tools)."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))

    @property
    def has_thinking(self) -> bool:
        """Whether the model's answer carried thinking or redacted-thinking blocks."""
        return any(isinstance(block, AnyThinking) for block in self.content)


class Round(BaseModel):
    """One user input and the steps the model took to answer it."""

    model_config = ConfigDict(extra="forbid")

    seq: int = Field(ge=0)
    user: str = Field(min_length=1)
    steps: list[Step] = Field(default_factory=list)


def _clean_text_blocks(blocks: Iterable[Any]) -> list[Any]:
    # The API rejects empty text blocks, and a model may well return one; drop them on entry
    # so no payload built later can carry one.
    return [b for b in blocks if not _is_blank_text(b)]


def _is_blank_text(block: Any) -> bool:
    return (
        isinstance(block, Mapping)
        and block.get("type") == "text"
        and not str(block.get("text", "")).strip()
    )


def _as_dict(block: Any) -> Any:
    if isinstance(block, BaseModel):
        return block.model_dump()
    return block


def build_step(
    seq: int,
    content: Sequence[Mapping[str, Any] | BaseModel],
    results: Sequence[Mapping[str, Any] | BaseModel] = (),
    usage: Usage | Mapping[str, int] | None = None,
    stop_reason: str | None = None,
    *,
    sent_estimate: int | None = None,
    layout: StepLayout | None = None,
) -> Step:
    """Validate a model answer and its tool results into a `Step`.

    Empty text blocks are dropped (the API would refuse them later); every `tool_use` must be
    answered exactly once and every result must answer a `tool_use` of this step, otherwise
    `UsageError` says which id is wrong.
    """
    raw_results = []
    for given in results:
        result = _as_dict(given)
        if isinstance(result, Mapping) and isinstance(result.get("content"), list):
            result = {**result, "content": _clean_text_blocks(result["content"])}
        raw_results.append(result)
    try:
        step = Step.model_validate(
            {
                "seq": seq,
                "content": _clean_text_blocks(_as_dict(b) for b in content),
                "results": raw_results,
                "usage": usage,
                "stop_reason": stop_reason,
                "sent_estimate": sent_estimate,
                "layout": layout,
            }
        )
    except ValidationError as exc:
        raise UsageError(f"invalid step: {exc.errors(include_url=False)}") from None
    _check_answers(step)
    return step


def _check_answers(step: Step) -> None:
    asked = [use.id for use in step.tool_uses]
    if len(set(asked)) != len(asked):
        raise UsageError(f"step {step.seq}: tool_use ids repeat within the step: {asked}")
    answered = [result.tool_use_id for result in step.results]
    if sorted(asked) != sorted(answered):
        raise UsageError(
            f"step {step.seq}: tool results must answer each tool_use exactly once "
            f"(tool_use ids {asked}, tool_result ids {answered})"
        )


def render_text(text: str) -> TextBlock:
    """One text block."""
    return {"type": "text", "text": text}


def render_user(text: str) -> Message:
    """A user turn holding one text block."""
    return {"role": "user", "content": [render_text(text)]}


def render_assistant(step: Step, *, thinking: bool = False) -> Message | None:
    """The step's assistant message, or None when it would hold no block.

    With `thinking`, its thinking blocks go back exactly as received, in their places;
    without, they are left out (what an older turn may do)."""
    blocks: list[ContentBlock] = []
    for block in step.content:
        if isinstance(block, TextContent):
            blocks.append(render_text(block.text))
        elif isinstance(block, ToolUseContent):
            blocks.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
            )
        elif thinking:
            blocks.append(block.model_dump())  # type: ignore[arg-type]
    if not blocks:
        return None
    return {"role": "assistant", "content": blocks}


def render_transcript(step: Step) -> Message:
    """The step retold as user text: its text, its tool calls and their results.

    A step whose thinking a compaction invalidated cannot go back as an assistant message
    in its own tool loop (its thinking would be refused, and without it the loop is refused),
    so it is shown as a record of what was done (docs/models.md, "Thinking")."""
    lines = [f"[step {step.seq}, kept through a compaction]"]
    if step.text.strip():
        lines.append(f"You wrote: {step.text}")
    results = {result.tool_use_id: result for result in step.results}
    for use in step.tool_uses:
        lines.append(f"You called {use.name} with {json.dumps(use.input, ensure_ascii=False)}")
        result = results.get(use.id)
        if result is not None:
            label = "It failed" if result.is_error else "It returned"
            lines.append(f"{label}: {result.text}")
    return render_user("\n".join(lines))


def render_result(result: ToolResultContent) -> ToolResultBlock:
    """One `tool_result` block."""
    content: str | list[TextBlock]
    if isinstance(result.content, str):
        content = result.content
    else:
        content = [render_text(block.text) for block in result.content]
    block: ToolResultBlock = {
        "type": "tool_result",
        "tool_use_id": result.tool_use_id,
        "content": content,
    }
    if result.is_error:
        block["is_error"] = True
    return block


def render_results(step: Step) -> Message | None:
    """The user message carrying the step's tool results, or None when it called no tool."""
    if not step.results:
        return None
    return {"role": "user", "content": [render_result(r) for r in step.results]}


def render_last_text(step: Step) -> Message | None:
    """The step's text alone, as an assistant message: how a round looks in history."""
    texts = [render_text(b.text) for b in step.content if isinstance(b, TextContent)]
    if not texts:
        return None
    return {"role": "assistant", "content": list(texts)}
