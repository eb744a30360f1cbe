"""The key-fact ledger: registered paths and ids survive every compaction, verbatim."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ctx_factories import SYSTEM, TOOLS, fixed_summarizer, summary_text, tool_step

from baton.context.conversation import Conversation
from baton.context.ledger import KeyFact, KeyFactLedger
from baton.context.records import Compaction
from baton.context.registry import make_strategy
from baton.context.strategy import ContextBudget
from baton.pipeline.summaries import ExecuteSummary, InitSummary


def test_merge_adds_missing_facts_without_overwriting() -> None:
    """Facts the model kept stay as written; missing ones are added under their label."""
    ledger = KeyFactLedger(
        [
            KeyFact(kind="path", value="scenarios/a/design.md", label="execution_output_dir"),
            KeyFact(kind="path", value="scenarios/a/report.json"),
            KeyFact(kind="id", value="sample_007"),
        ]
    )
    summary: dict[str, Any] = {
        "key_paths": {
            "execution_output_dir": "scenarios/a/iteration_2",
            "report": "scenarios/a/report.json",
        }
    }
    ledger.merge_into(summary)
    assert {
        "execution_output_dir": "scenarios/a/iteration_2",
        "report": "scenarios/a/report.json",
        "execution_output_dir#2": "scenarios/a/design.md",
    } == summary["key_paths"]
    assert {"sample_007": "sample_007"} == summary["key_ids"]


def test_each_fact_is_registered_once() -> None:
    """Registering the same path twice keeps one entry."""
    ledger = KeyFactLedger()
    assert 1 == len(ledger.add([KeyFact(kind="path", value="a/b")]))
    assert [] == ledger.add([KeyFact(kind="path", value="a/b", source="Write")])
    assert (["a/b"], True) == (ledger.paths, "a/b" in ledger)


def _forgetful(schema: Any, n: int) -> Any:
    # Every third summary is unusable, so both the LLM path and the fallback path are tested.
    if n % 3 == 2:
        return fixed_summarizer("not json")
    return fixed_summarizer(summary_text(schema, key_paths={"unrelated": f"notes/{n}.md"}))


@pytest.mark.parametrize(
    ("strategy_name", "schema"),
    [("summarize", InitSummary), ("summarize", ExecuteSummary), ("extract_state", InitSummary)],
)
async def test_registered_paths_survive_ten_consecutive_compactions(
    strategy_name: str, schema: Any
) -> None:
    """100% of registered paths are in every summary through 10 compactions."""
    conversation = Conversation()
    records: list[Any] = [conversation.start_round("go")]
    strategy = make_strategy(
        strategy_name,
        ContextBudget(context_window=40_000, compact_threshold=20_000, keep_recent_steps=2),
        summary_schema=schema,
    )
    registered: list[str] = []
    compactions: list[Compaction] = []
    for n in range(10):
        for k in range(3):
            records.append(tool_step(conversation, tools=1, result_chars=300))
            path = f"scenarios/leave/execution_outputs/iteration_{n}/file_{k}.json"
            registered.append(path)
            facts = conversation.register_paths([path], source="handoff")
            records.append(facts)
        compaction = await strategy.compact(conversation, _forgetful(schema, n))
        records.append(compaction)
        compactions.append(compaction)
        summary = json.loads(compaction.summary or "")
        missing = [p for p in registered if p not in summary["key_paths"].values()]
        assert [] == missing
    if strategy_name == "summarize":
        assert {"llm", "fallback"} == {c.mode for c in compactions}
    shown = json.dumps(strategy.compose_payload(SYSTEM, TOOLS, conversation), ensure_ascii=False)
    assert all(p in shown for p in registered)
    replayed = Conversation.replay(records)
    assert registered == replayed.ledger.paths
