"""Property: whatever the conversation, every payload that leaves `context/` is a valid request.

Random rounds; steps with 0-3 tool uses, empty or CJK text, results up to 12K characters;
compactions at random points with summaries that succeed, are invalid, raise or hang; all
three strategies; both summary roles. Every composed payload (and every compaction payload)
passes the validity checker, its estimate is exactly the estimator's figure for the whole
payload (the incremental accounting re-counts nothing and misses nothing), replaying the
journal rebuilds the same conversation, and (stride 1, or `summarize` with any stride and
`strip_batch_tokens`) a fresh strategy composes the same payload as the one that followed
the conversation turn by turn.
"""

from __future__ import annotations

from typing import Any

import anyio
from anyio.lowlevel import checkpoint
from ctx_factories import SYSTEM, TOOLS, InstantClock, assert_valid, summary_text
from hypothesis import given, settings
from hypothesis import strategies as st

from baton.context.conversation import Conversation
from baton.context.payload import Payload
from baton.context.registry import make_strategy
from baton.context.steps import ThinkingContent
from baton.context.strategy import ContextBudget
from baton.context.tokens import estimate_payload_tokens
from baton.pipeline.summaries import SUMMARY_SCHEMAS

TEXTS = st.sampled_from(["", "  ", "ok", "读取文件并分析结果。", "Checking scenarios/a/b.json"])

ACTION = st.one_of(
    st.tuples(st.just("round"), st.integers(1, 3000)),
    st.tuples(
        st.just("step"),
        st.integers(0, 3),
        TEXTS,
        st.lists(st.integers(0, 12_000), min_size=3, max_size=3),
        st.booleans(),
        st.booleans(),
    ),
    st.tuples(st.just("step"), st.just(0), TEXTS, st.just([0, 0, 0]), st.booleans(), st.booleans()),
    st.tuples(st.just("compact"), st.sampled_from(["valid", "invalid", "raise", "hang"])),
)


def _summarizer(kind: str, schema_name: str, seen: list[Payload]) -> Any:
    async def summarize(payload: Payload) -> str:
        seen.append(payload)
        if kind == "raise":
            raise RuntimeError("model unavailable")
        if kind == "hang":
            while True:
                await checkpoint()
        if kind == "invalid":
            return "I cannot produce JSON right now."
        return summary_text(SUMMARY_SCHEMAS[schema_name], analysis_conclusions=["x"])

    return summarize


def assert_thinking_goes_back(conversation: Conversation, payload: Payload) -> None:
    """A tool loop continues with the last answer as received, thinking first; thinking
    shows only for steps of the open round made since the last compaction."""
    last = conversation.last_step
    shown = [
        block["signature"]
        for message in payload["messages"]
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "thinking"
    ]
    live = [
        block.signature
        for entry in conversation.entries
        if entry.round_index == len(conversation.rounds) - 1
        and entry.step.seq >= conversation.thinking_from
        for block in entry.step.content
        if isinstance(block, ThinkingContent)
    ]
    assert set(shown) <= set(live)
    entries = conversation.entries
    in_open_round = bool(entries) and entries[-1].round_index == len(conversation.rounds) - 1
    if (
        last is not None
        and in_open_round
        and last.has_tool_use
        and last.seq >= conversation.thinking_from
    ):
        sent = payload["messages"][-2]["content"]
        expected = [block.model_dump() for block in last.content]
        bare = [{k: v for k, v in b.items() if k != "cache_control"} for b in sent]
        # The tail: a step after an answer that ended its round (which the agent loop never
        # makes) merges into that answer's message.
        assert expected == bare[-len(expected) :]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    name=st.sampled_from(["summarize", "sliding_window", "extract_state"]),
    role=st.sampled_from(["assistant", "system"]),
    schema_name=st.sampled_from(sorted(SUMMARY_SCHEMAS)),
    keep=st.integers(1, 5),
    stride=st.integers(1, 3),
    batch=st.sampled_from([None, 400, 3_000]),
    threshold=st.integers(2_000, 20_000),
    with_system=st.booleans(),
    with_tools=st.booleans(),
    actions=st.lists(ACTION, min_size=8, max_size=50),
)
def test_every_composed_payload_is_a_valid_request(
    *,
    name: str,
    role: str,
    schema_name: str,
    keep: int,
    stride: int,
    batch: int | None,
    threshold: int,
    with_system: bool,
    with_tools: bool,
    actions: list[tuple[Any, ...]],
) -> None:
    """Random conversations, compactions and strategies only ever yield valid payloads."""
    budget = ContextBudget(
        context_window=threshold * 2,
        compact_threshold=threshold,
        keep_recent_steps=keep,
        max_output_tokens=500,
        summary_role=role,  # type: ignore[arg-type]
    )
    options: dict[str, Any] = {"refill": 1 / stride} if name == "sliding_window" else {}
    if name != "sliding_window":
        options["stride"] = stride
    if name == "summarize":
        options["strip_batch_tokens"] = batch
    seen: list[Payload] = []
    events: list[Any] = []

    async def scenario() -> None:
        strategy = make_strategy(
            name,
            budget,
            summary_schema=SUMMARY_SCHEMAS[schema_name],
            on_event=events.append,
            clock=InstantClock(),
            **options,
        )
        conversation = Conversation()
        records: list[Any] = [conversation.start_round("开始：生成请假申请场景 scenarios/leave")]
        counter = 0
        system = SYSTEM if with_system else None
        tool_specs = TOOLS if with_tools else []
        for action in actions:
            if action[0] == "round":
                records.append(conversation.start_round("需求 " + "x" * action[1]))
            elif action[0] == "step":
                _, tools, text, sizes, cjk, thinks = action
                content: list[dict[str, Any]] = [{"type": "text", "text": text}]
                if thinks:  # as a thinking model answers: its blocks first, text may be empty
                    counter += 1
                    content.insert(
                        0, {"type": "thinking", "thinking": "", "signature": f"s{counter}"}
                    )
                results = []
                for t in range(tools):
                    counter += 1
                    content.append(
                        {"type": "tool_use", "id": f"tu_{counter}", "name": "Read", "input": {}}
                    )
                    body = ("结果" if cjk else "ab") * (sizes[t] // 2)
                    results.append(
                        {"type": "tool_result", "tool_use_id": f"tu_{counter}", "content": body}
                    )
                usage = {"input_tokens": 900, "output_tokens": 50} if cjk else None
                records.append(conversation.append_step(content, results, usage))
                strategy.on_turn_complete(conversation)
                if strategy.should_compact(conversation, budget):
                    records.append(
                        await strategy.compact(
                            conversation, _summarizer("valid", schema_name, seen)
                        )
                    )
            elif conversation.entries:
                records.append(
                    await strategy.compact(conversation, _summarizer(action[1], schema_name, seen))
                )
            if conversation.awaiting_reply:
                payload = strategy.compose_payload(system, tool_specs, conversation)
                assert_valid(payload)
                assert estimate_payload_tokens(payload) == conversation.account._sent_raw
                assert_thinking_goes_back(conversation, payload)
        for payload in seen:
            assert_valid(payload)
            assert "temperature" not in payload
            assert 4000 == payload["max_tokens"]
        replayed = Conversation.replay(records)
        assert conversation.model_dump() == replayed.model_dump()
        # The whole part's start is a function of the steps: a fresh strategy lays out the
        # same request (summarize with any batching; the others with stride 1).
        if (stride == 1 or name == "summarize") and conversation.awaiting_reply:
            fresh = make_strategy(
                name, budget, summary_schema=SUMMARY_SCHEMAS[schema_name], **options
            )
            assert strategy.compose_payload(
                system, tool_specs, conversation
            ) == fresh.compose_payload(system, tool_specs, conversation)

    anyio.run(scenario, backend="asyncio")
