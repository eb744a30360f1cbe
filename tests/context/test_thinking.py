"""Thinking blocks: sent back unchanged within their tool loop, behind an unchanged prefix."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from ctx_factories import SYSTEM, TOOLS, assert_valid, fixed_summarizer, summary_text

from baton.context.conversation import Conversation
from baton.context.payload import Payload
from baton.context.records import dump_record
from baton.context.registry import make_strategy
from baton.context.strategy import ContextBudget, ContextStrategy
from baton.pipeline.summaries import InitSummary

STRATEGIES = ("summarize", "sliding_window", "extract_state")
_ids = itertools.count()


def budget(**overrides: Any) -> ContextBudget:
    return ContextBudget.model_validate(
        {
            "context_window": 1_000_000,
            "compact_threshold": 6_000,
            "keep_recent_steps": 3,
            "thinking": "adaptive",
            **overrides,
        }
    )


def answer(thinking: bool = True, *, tool: bool = True) -> list[dict[str, Any]]:
    """A model reply: a thinking block (empty text, as Opus shows it), text, maybe a call."""
    n = next(_ids)
    blocks: list[dict[str, Any]] = []
    if thinking:
        blocks.append({"type": "thinking", "thinking": "", "signature": f"sig-{n}-" + "s" * 40})
        if n % 3 == 0:
            blocks.append({"type": "redacted_thinking", "data": f"opaque-{n}"})
    blocks.append({"type": "text", "text": f"Step {n}: reading the next file."})
    if tool:
        blocks.append(
            {"type": "tool_use", "id": f"toolu_t{n}", "name": "Read", "input": {"path": f"f{n}"}}
        )
    return blocks


def results_for(content: list[dict[str, Any]], chars: int = 400) -> list[dict[str, Any]]:
    return [
        {"type": "tool_result", "tool_use_id": b["id"], "content": "x" * chars}
        for b in content
        if b["type"] == "tool_use"
    ]


def bare(value: Any) -> Any:
    """`value` without cache_control anywhere: breakpoints are not part of the prefix."""
    if isinstance(value, dict):
        return {k: bare(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [bare(v) for v in value]
    return value


def thinking_blocks(payload: Payload) -> list[Any]:
    return [
        block
        for message in payload["messages"]
        for block in message["content"]
        if isinstance(block, dict) and block["type"] in ("thinking", "redacted_thinking")
    ]


class Loop:
    """A conversation driven through one strategy, keeping every payload and record."""

    def __init__(self, strategy: ContextStrategy) -> None:
        self.strategy = strategy
        self.conversation = Conversation()
        self.payloads: list[Payload] = []
        self.records: list[dict[str, Any]] = []

    def start(self, text: str = "Design the leave-application scenario.") -> None:
        self.records.append(dump_record(self.conversation.start_round(text)))

    def compose(self) -> Payload:
        payload = self.strategy.compose_payload(SYSTEM, TOOLS, self.conversation)
        assert_valid(payload)
        self.payloads.append(payload)
        return payload

    def step(self, content: list[dict[str, Any]], usage: dict[str, int] | None = None) -> None:
        record = self.conversation.append_step(content, results_for(content), usage)
        self.records.append(dump_record(record))
        self.strategy.on_turn_complete(self.conversation)

    async def compact(self) -> None:
        summarize = fixed_summarizer(summary_text(InitSummary))
        record = await self.strategy.compact(self.conversation, summarize)
        self.records.append(dump_record(record))


def continues(previous: Payload, content: list[dict[str, Any]], payload: Payload) -> bool:
    """`payload` is `previous` plus the answer to it (as received) and its tool results."""
    expected = [
        *bare(previous["messages"]),
        {"role": "assistant", "content": content},
        {"role": "user", "content": bare(results_for(content))},
    ]
    same_head = bare(previous.get("system")) == bare(payload.get("system"))
    return same_head and expected == bare(payload["messages"])


@pytest.mark.parametrize("name", STRATEGIES)
async def test_a_thinking_tool_loop_only_ever_appends_to_its_requests(name: str) -> None:
    """Twelve steps with thinking: each request is the last one plus the step that answered
    it, thinking blocks first and unchanged, although the strategy would otherwise re-cut."""
    loop = Loop(make_strategy(name, budget(), summary_schema=InitSummary))
    loop.start()
    previous = loop.compose()
    for n in range(12):
        content = answer()
        loop.step(content)
        if n % 4 == 1:  # a file written mid-loop joins the key facts extract_state shows
            facts = loop.conversation.register_paths([f"scenarios/demo/out_{n}.json"])
            assert facts is not None
            loop.records.append(dump_record(facts))
        payload = loop.compose()
        assert continues(previous, content, payload)
        previous = payload
    assert 12 + 4 == len(thinking_blocks(previous))  # every step's, redacted ones included


@pytest.mark.parametrize("name", ["summarize", "extract_state"])
async def test_without_thinking_the_history_is_still_re_cut_every_turn(name: str) -> None:
    """Steps without thinking blocks pin nothing: older steps leave the recent part."""
    loop = Loop(make_strategy(name, budget(thinking="off"), summary_schema=InitSummary))
    loop.start()
    loop.compose()
    for _ in range(6):
        loop.step(answer(thinking=False))
        payload = loop.compose()
    tool_uses = [
        b for m in payload["messages"] for b in m["content"] if b.get("type") == "tool_use"
    ]
    assert 3 == len(tool_uses)  # the last N steps whole, as before thinking existed


async def test_a_new_round_drops_the_thinking_of_closed_rounds_and_re_cuts() -> None:
    """Once a round has ended, its thinking is left out and the history is re-cut: a new
    round starts with the earlier rounds folded (docs/context.md, "summarize")."""
    loop = Loop(make_strategy("summarize", budget(), summary_schema=InitSummary))
    loop.start()
    loop.compose()
    for _ in range(5):
        loop.step(answer())
        loop.compose()
    loop.step(answer(tool=False))
    loop.start("Now revise the design.")
    payload = loop.compose()
    assert [] == thinking_blocks(payload)
    tool_uses = [
        b for m in payload["messages"] for b in m["content"] if b.get("type") == "tool_use"
    ]
    assert 0 == len(tool_uses)  # the closed round shows its input and last answer only


async def test_a_compaction_in_a_thinking_loop_retells_what_it_kept() -> None:
    """After a compaction mid-loop the kept steps are retold as text (their thinking no longer
    fits the new prefix), the request ends with the user, and the loop appends again."""
    loop = Loop(make_strategy("summarize", budget(), summary_schema=InitSummary))
    loop.start()
    loop.compose()
    for _ in range(6):
        loop.step(answer())
        loop.compose()
    compaction_payload = loop.strategy.compaction_payload(loop.conversation)  # type: ignore[attr-defined]
    assert continues_with_prompt(loop.payloads[-1], compaction_payload)
    await loop.compact()
    after = loop.compose()
    assert [] == thinking_blocks(after)
    assert "user" == after["messages"][-1]["role"]
    retold = after["messages"][-1]["content"]
    assert 3 == sum("kept through a compaction" in b.get("text", "") for b in retold)
    content = answer()
    loop.step(content)
    assert continues(after, content, loop.compose())


def continues_with_prompt(previous: Payload, compaction: Payload) -> bool:
    """The summary request is the turn request with the compact prompt added at its end."""
    messages = bare(compaction["messages"])
    head, last = messages[:-1], messages[-1]
    before = bare(previous["messages"])
    return head == before[:-1] and last["content"][:-1] == before[-1]["content"]


@pytest.mark.parametrize("name", STRATEGIES)
async def test_a_replayed_loop_composes_the_request_the_live_one_would(name: str) -> None:
    """Rebuilt from its journal records mid-loop (after a crash), a conversation sends the
    request the uninterrupted one sends: the same prefix for the thinking blocks."""
    live = Loop(make_strategy(name, budget(), summary_schema=InitSummary))
    live.start("First round.")
    live.compose()
    for _ in range(4):
        live.step(answer(thinking=False))
        live.compose()
    live.step(answer(thinking=False, tool=False))
    live.start("Second round, with thinking.")
    live.compose()
    for _ in range(7):
        live.step(answer())
        live.compose()
    replayed = Conversation.replay(live.records)
    strategy = make_strategy(name, budget(), summary_schema=InitSummary)
    expected = live.strategy.compose_payload(SYSTEM, TOOLS, live.conversation)
    assert bare(expected) == bare(strategy.compose_payload(SYSTEM, TOOLS, replayed))


async def test_the_request_carries_the_thinking_setting_and_room_to_think_before_a_summary() -> (
    None
):
    """adaptive → `thinking: adaptive`, effort → output_config; the summary request keeps them
    and adds max_output_tokens of room before the 4000-token summary."""
    strategy = make_strategy("summarize", budget(effort="low"), summary_schema=InitSummary)
    loop = Loop(strategy)
    loop.start()
    payload = loop.compose()
    assert ({"type": "adaptive"}, {"effort": "low"}) == (
        payload.get("thinking"),
        payload.get("output_config"),
    )
    loop.step(answer())
    summary = strategy.compaction_payload(loop.conversation)  # type: ignore[attr-defined]
    assert ({"type": "adaptive"}, 4000 + 16_000) == (summary.get("thinking"), summary["max_tokens"])
    manual = ContextBudget.model_validate({"thinking": 2048, "max_output_tokens": 4096})
    assert {"type": "enabled", "budget_tokens": 2048} == manual.thinking_param
    assert 4000 + 2048 == manual.summary_request_tokens
    assert None is budget(thinking="off").thinking_param
