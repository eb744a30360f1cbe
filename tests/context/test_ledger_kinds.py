"""Facts of every kind found in tool results and user messages join the ledger: shown after
every compaction, each once, the stored ledger bounded, old journals still loading."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ctx_factories import SYSTEM, TOOLS, fixed_summarizer, summary_text, tool_step

from baton.context.conversation import Conversation
from baton.context.ledger import (
    LEDGER_MAX_PATTERN_FACTS,
    KeyFact,
    KeyFactLedger,
    found_facts,
    id_facts,
)
from baton.context.ledger_patterns import FactPatterns
from baton.context.registry import make_strategy
from baton.context.strategy import ContextBudget
from baton.pipeline.summaries import ExecuteSummary

STRATEGIES = ("summarize", "sliding_window", "extract_state")
PATTERNS = FactPatterns()


def _budget(**overrides: Any) -> ContextBudget:
    values: dict[str, Any] = {
        "context_window": 40_000,
        "compact_threshold": 8_000,
        "keep_recent_steps": 2,
        "max_output_tokens": 2_000,
    }
    return ContextBudget.model_validate({**values, **overrides})


def _facts_of_every_kind(n: int) -> tuple[str, str, list[str]]:
    """A user message and a tool result carrying one fact of each kind, distinct per `n`."""
    user = f"ticket OPS-{7000 + n} opened 2026-03-{n + 1:02d}T09:26:53Z by ana{n}@example.com"
    result = (
        f"commit 9fceb{n:02d}a touched src/billing/writer_{n}.py; "
        f"see https://ci.example.com/runs/{n}; tz UTC+{n % 12}; took {n + 12}.5 ms"
    )
    values = [
        f"OPS-{7000 + n}",
        f"2026-03-{n + 1:02d}T09:26:53Z",
        f"ana{n}@example.com",
        f"9fceb{n:02d}a",
        f"src/billing/writer_{n}.py",
        f"https://ci.example.com/runs/{n}",
        f"UTC+{n % 12}",
        f"{n + 12}.5 ms",
    ]
    return user, result, values


@pytest.mark.parametrize("strategy_name", STRATEGIES)
async def test_facts_found_in_text_are_in_every_request_after_ten_forgetful_compactions(
    strategy_name: str,
) -> None:
    """Ids, hashes, stamps, offsets, paths, URLs, emails and amounts a user message or a tool
    result carried, never registered by name, are in the request after each of ten
    compactions whose summary forgets everything."""
    strategy = make_strategy(strategy_name, _budget(), summary_schema=ExecuteSummary)
    forgetful = fixed_summarizer(summary_text(ExecuteSummary, pending_work=["carry on"]))
    conversation = Conversation()
    mentioned: list[str] = []
    for n in range(10):
        user, result, values = _facts_of_every_kind(n)
        conversation.start_round(user)
        conversation.register_facts(PATTERNS.facts([user], source="user"))
        tool_step(conversation, result_text=result)
        conversation.register_facts(PATTERNS.facts([result], source="tool"))
        mentioned += values
        for _ in range(4):
            tool_step(conversation, text="Checking the next file.", result_chars=6_000)
        await strategy.compact(conversation, forgetful)
        conversation.start_round("go on")
        tool_step(conversation, text="Reading on.", result_chars=50)
        payload = strategy.compose_payload(SYSTEM, TOOLS, conversation)
        shown = json.dumps([payload.get("system"), payload["messages"]], ensure_ascii=False)
        assert [] == [value for value in mentioned if value not in shown], n


def test_kinds_go_to_their_section_under_their_kind() -> None:
    """Paths and URLs go under `key_paths`, the other kinds under `key_ids`, keyed by their
    kind (`hash`, `hash#2`); a value the summary holds already is not added again."""
    ledger = KeyFactLedger(
        found_facts(
            [
                ("hash", "9fceb02"),
                ("hash", "e83c516"),
                ("url", "https://ci.example.com/runs/1"),
                ("path", "src/app.py"),
                ("datetime", "2026-03-14"),
            ]
        )
    )
    summary: dict[str, Any] = {"key_ids": {"commit": "e83c516"}}
    ledger.merge_into(summary)
    assert {"url": "https://ci.example.com/runs/1", "path": "src/app.py"} == summary["key_paths"]
    assert {"commit": "e83c516", "hash": "9fceb02", "datetime": "2026-03-14"} == summary["key_ids"]


def test_past_the_cap_built_in_kinds_go_before_the_agents_own_patterns() -> None:
    """Facts of a built-in kind go first past the cap, then the ids the agent's own patterns
    found, then the other ids, then paths; the agent's patterns register with origin
    `pattern`, the built-in kinds with `builtin`."""
    found = FactPatterns([r"TICKET-\d+"]).facts(["TICKET-4711 at 2026-03-14 took 12.5 ms"])
    assert [("TICKET-4711", "pattern"), ("2026-03-14", "builtin"), ("12.5 ms", "builtin")] == [
        (fact.value, fact.origin) for fact in found
    ]
    ledger = KeyFactLedger(
        [
            KeyFact(kind="path", value="scenarios/a/design.md"),
            KeyFact(kind="id", value="leave#1"),
            *found,
        ]
    )
    by_value = {fact.value: fact for fact in ledger}
    order = ["2026-03-14", "12.5 ms", "TICKET-4711", "leave#1", "scenarios/a/design.md"]
    total = sum(fact.tokens for fact in ledger)
    for dropped in range(1, len(order)):
        cap = total - sum(by_value[value].tokens for value in order[:dropped])
        shown, left_out = ledger.shown(max_tokens=cap)
        assert (set(order[dropped:]), dropped) == ({f.value for f in shown}, left_out)


def test_a_value_registered_already_is_not_found_again_as_another_kind() -> None:
    """A value a work order registered is not registered again when a pattern finds it."""
    ledger = KeyFactLedger(id_facts(["2026-03-14"], source="dispatch"))
    assert [] == ledger.add(found_facts([("datetime", "2026-03-14")]))
    assert ["2026-03-14"] == [fact.value for fact in ledger]


async def test_a_long_run_keeps_the_newest_pattern_facts_and_every_registered_one() -> None:
    """Past `LEDGER_MAX_PATTERN_FACTS`, a compaction keeps the newest facts found by pattern
    and every fact registered by name; a replay keeps the same ones and sends the same."""
    strategy = make_strategy("sliding_window", _budget())
    conversation = Conversation()
    records: list[Any] = [conversation.start_round("go")]
    per_step = 40
    steps = 2 * LEDGER_MAX_PATTERN_FACTS // per_step
    for n in range(steps):
        text = " ".join(f"job_{n}x{k}" for k in range(per_step))
        records.append(tool_step(conversation, result_text=text))
        records.append(conversation.register_facts(PATTERNS.facts([text], source="tool")))
        records.append(conversation.register_paths([f"out/step_{n}.json"], source="Write"))
        if n % 5 == 4:
            records.append(await strategy.compact(conversation, fixed_summarizer("")))
    found = [fact.value for fact in conversation.ledger if fact.origin is not None]
    newest = [f"job_{n}x{k}" for n in range(steps) for k in range(per_step)]
    assert newest[-LEDGER_MAX_PATTERN_FACTS:] == found
    assert [f"out/step_{n}.json" for n in range(steps)] == conversation.ledger.paths
    assert list(conversation.ledger) == conversation.facts
    replayed = Conversation.replay(records)
    assert conversation.facts == replayed.facts
    fresh = make_strategy("sliding_window", _budget())
    assert strategy.compose_payload(SYSTEM, TOOLS, conversation) == fresh.compose_payload(
        SYSTEM, TOOLS, replayed
    )


def test_a_ledger_journaled_before_the_kinds_still_loads() -> None:
    """A `facts` record as the old code wrote it (paths and ids, pattern ids labelled by
    nothing) replays beside one of the new kinds, each shown as it was journaled."""
    old = {
        "type": "facts",
        "facts": [
            {"kind": "path", "value": "scenarios/a/design.md", "label": None, "source": "Write"},
            {"kind": "id", "value": "TICKET-4711", "label": None, "source": "user"},
            {"kind": "id", "value": "BS_MT_042", "source": "tool", "origin": "pattern"},
        ],
    }
    round_ = {"type": "round", "round": 0, "text": "go", "key": None}
    new = Conversation().register_facts(PATTERNS.facts(["at commit 9fceb02"], source="tool"))
    assert new is not None
    conversation = Conversation.replay([round_, old, new.model_dump(mode="json")])
    assert [
        KeyFact(kind="path", value="scenarios/a/design.md", source="Write"),
        KeyFact(kind="id", value="TICKET-4711", source="user"),
        KeyFact(kind="id", value="BS_MT_042", source="tool", origin="pattern"),
        KeyFact(kind="hash", value="9fceb02", label="hash", source="tool", origin="builtin"),
    ] == list(conversation.ledger)
    summary: dict[str, Any] = {}
    conversation.ledger.merge_into(summary)
    assert {"TICKET-4711": "TICKET-4711", "BS_MT_042": "BS_MT_042", "hash": "9fceb02"} == (
        summary["key_ids"]
    )
