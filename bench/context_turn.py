"""Per-turn bookkeeping cost of the context engine at 100, 1K and 10K messages, one run.

Run: .venv/bin/python bench/context_turn.py [--repeats R] [--turns T]

A turn's bookkeeping is what the agent loop does besides the model call: append the step
(validate, render, estimate, update the account), `on_turn_complete`, `should_compact`.
Composing the next payload is timed on its own: it hands over a list as long as the
payload, so it cannot be O(1), only cheap. The baseline, measured in the same run, is what
a non-incremental engine does each turn to know its context size: render the conversation
and estimate it whole. Figures are medians over R x T turns, each timed alone.
Goal: bookkeeping at 10K messages <= 2x bookkeeping at 100.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from baton.context.conversation import Conversation
from baton.context.payload import Payload
from baton.context.strategy import ContextBudget
from baton.context.summarize import SummarizeStrategy
from baton.context.tokens import estimate_payload_tokens

SYSTEM = "You are the Execute Agent. " * 40
TOOLS: list[Any] = [
    {"name": n, "description": f"{n} a file", "input_schema": {"type": "object"}}
    for n in ("Read", "Write", "List")
]
BUDGET = ContextBudget(
    context_window=1_000_000_000, compact_threshold=900_000_000, keep_recent_steps=5
)
STEPS_PER_ROUND = 10


class _Ids:
    def __init__(self) -> None:
        self.n = 0

    def next(self) -> str:
        self.n += 1
        return f"toolu_{self.n}"


def _step(ids: _Ids, final: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    text = {"type": "text", "text": "Checking the next trace file for layer-2 failures."}
    if final:
        return [{**text, "text": "Iteration done: 12/15 samples pass. 生成完成。"}], []
    tool_id = ids.next()
    use = {"type": "tool_use", "id": tool_id, "name": "Read", "input": {"path": "a/b.json"}}
    result = {"type": "tool_result", "tool_use_id": tool_id, "content": "trace line\n" * 90}
    return [text, use], [result]


def _records(messages: int, ids: _Ids) -> list[Any]:
    """Journal records of a conversation of about `messages` messages."""
    conversation = Conversation()
    records: list[Any] = []
    count = 0
    while count < messages:
        records.append(conversation.start_round("Generate the leave-request samples. " * 5))
        count += 1
        for k in range(STEPS_PER_ROUND):
            final = k == STEPS_PER_ROUND - 1
            content, results = _step(ids, final)
            records.append(conversation.append_step(content, results, {"input_tokens": 1000}))
            count += 1 if final else 2
    # The timed turns append tool steps to an open round.
    records.append(conversation.start_round("Next iteration."))
    return records


def _timed(fn: Callable[..., Any], *args: Any) -> float:
    start = time.perf_counter_ns()
    fn(*args)
    return (time.perf_counter_ns() - start) / 1000


def _render_whole(conversation: Conversation) -> Payload:
    """Every message of the conversation, whole (what a non-incremental engine re-counts)."""
    messages: list[Any] = []
    entries = iter(conversation.entries)
    entry = next(entries, None)
    for r, round_ in enumerate(conversation.round_entries):
        messages.append(round_.message)
        while entry is not None and entry.round_index == r:
            messages.extend(m for m in (entry.assistant, entry.results) if m is not None)
            entry = next(entries, None)
    return {"max_tokens": 1, "system": SYSTEM, "tools": TOOLS, "messages": messages}


def _fresh(records: list[Any]) -> tuple[Conversation, SummarizeStrategy]:
    conversation = Conversation.replay(records)
    strategy = SummarizeStrategy(BUDGET)
    strategy.compose_payload(SYSTEM, TOOLS, conversation)  # first sync: O(n), once
    gc.collect()
    return conversation, strategy


def _bookkeeping(
    conversation: Conversation, strategy: SummarizeStrategy, content: Any, results: Any
) -> None:
    conversation.append_step(content, results, {"input_tokens": 1000, "output_tokens": 40})
    strategy.on_turn_complete(conversation)
    strategy.should_compact(conversation, BUDGET)


def _recount(conversation: Conversation) -> int:
    return estimate_payload_tokens(_render_whole(conversation))


def measure(messages: int, repeats: int, turns: int) -> dict[str, float]:
    """Median per-turn microseconds of bookkeeping, compose and the baseline at this size.

    Each figure is timed in its own loop: interleaving them would bill the bookkeeping for
    the cache misses and collections the whole-history baseline causes.
    """
    ids = _Ids()
    records = _records(messages, ids)
    bookkeeping: list[float] = []
    compose: list[float] = []
    recount: list[float] = []
    for _ in range(repeats):
        conversation, strategy = _fresh(records)
        steps = [_step(ids, final=False) for _ in range(turns)]
        for content, results in steps:
            bookkeeping.append(_timed(_bookkeeping, conversation, strategy, content, results))
        conversation, strategy = _fresh(records)
        for content, results in (_step(ids, final=False) for _ in range(turns)):
            _bookkeeping(conversation, strategy, content, results)
            compose.append(_timed(strategy.compose_payload, SYSTEM, TOOLS, conversation))
        recount.extend(_timed(_recount, conversation) for _ in range(max(1, turns // 4)))
    return {
        "messages": float(len(_render_whole(Conversation.replay(records))["messages"])),
        "bookkeeping": statistics.median(bookkeeping),
        "compose": statistics.median(compose),
        "recount": statistics.median(recount),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    rows = [measure(n, args.repeats, args.turns) for n in (100, 1_000, 10_000)]
    print("per-turn cost, median microseconds (baseline: render + estimate the whole history)")
    print(f"{'messages':>9} {'bookkeeping':>12} {'compose':>9} {'baseline':>10} {'vs base':>8}")
    for row in rows:
        print(
            f"{row['messages']:>9.0f} {row['bookkeeping']:>12.1f} {row['compose']:>9.1f} "
            f"{row['recount']:>10.1f} {row['bookkeeping'] / row['recount']:>8.4f}"
        )
    small, large = rows[0], rows[-1]
    growth = large["bookkeeping"] / small["bookkeeping"]
    print(
        f"bookkeeping 10K/100: {growth:.2f}x (goal <= 2x: {'met' if growth <= 2 else 'MISSED'}); "
        f"compose 10K/100: {large['compose'] / small['compose']:.2f}x; "
        f"baseline 10K/100: {large['recount'] / small['recount']:.1f}x"
    )


if __name__ == "__main__":
    main()
