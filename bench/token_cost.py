"""Billed input tokens of a long synthetic session under each strategy, with prompt caching.

Run: .venv/bin/python bench/token_cost.py [--steps N] [--seed S]

One deterministic session (>= 300 steps in rounds of 5-15, tool results of 1K-20K tokens,
a fifth of them Chinese) is replayed through each strategy and budget. Every request,
turns and compaction calls alike, is billed by `baton.context.prompt_cache.PrefixCache`, the
prompt-cache simulation the offline model reports usage with (uncached 1x, cache write 1.25x,
cache read 0.1x, 20-block lookback, 1024-token minimum, 5-minute entries). The baseline, in
the same run, is seed 000's assembly recomputed every turn and sent without cache
breakpoints, i.e. what the seed's pseudo-code bills. Printed per row:
billed input-token equivalents (millions), ratio to the baseline, model calls, compactions,
the share of input tokens read from cache, and the mean request size.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass, field
from typing import Any

import anyio

from baton.context.conversation import Conversation
from baton.context.payload import Payload
from baton.context.prompt_cache import PrefixCache
from baton.context.registry import make_strategy
from baton.context.strategy import ContextBudget, ContextStrategy
from baton.context.summary_format import ExecuteSummary
from baton.context.tokens import estimate_message_tokens
from baton.context.usage import Usage

SYSTEM = "You are the Execute Agent: generate tools, checkers and samples; evaluate. " * 60
TOOLS: list[Any] = [
    {
        "name": name,
        "description": f"{name} a workspace file. " * 20,
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    for name in ("Read", "Write", "List")
]


@dataclass
class SynthStep:
    content: list[dict[str, Any]]
    results: list[dict[str, Any]]


@dataclass
class SynthRound:
    text: str
    steps: list[SynthStep] = field(default_factory=list)


def session(steps: int, seed: int) -> list[SynthRound]:
    """A deterministic session: rounds of 5-15 steps, the last of each a final answer."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible synthetic session, not a secret
    rounds: list[SynthRound] = []
    made = 0
    tool_n = 0
    while made < steps:
        round_ = SynthRound(f"Iteration {len(rounds)}: fix the failing samples. " * 20)
        count = rng.randint(5, 15)
        for k in range(count):
            words = " ".join(rng.choice(("trace", "checker", "layer", "sample")) for _ in range(60))
            if k == count - 1:
                text = f"Iteration {len(rounds)} done; success 12/15. {words}"
                round_.steps.append(SynthStep([{"type": "text", "text": text}], []))
                continue
            tool_n += 1
            tool_id = f"toolu_{tool_n}"
            path = f"scenarios/leave/execution_outputs/iteration_{len(rounds)}/trace_{k}.json"
            tokens = rng.randint(1_000, 20_000)
            body = "结果" * (tokens // 2) if rng.random() < 0.2 else "x" * int(tokens * 3.2)
            round_.steps.append(
                SynthStep(
                    [
                        {"type": "text", "text": f"Reading {path}. {words}"},
                        {
                            "type": "tool_use",
                            "id": tool_id,
                            "name": "Read",
                            "input": {"path": path},
                        },
                    ],
                    [{"type": "tool_result", "tool_use_id": tool_id, "content": body}],
                )
            )
        made += count
        rounds.append(round_)
    return rounds


def _summary() -> str:
    data = ExecuteSummary.empty()
    data["pending_work"] = [
        f"re-run failing sample_{i:03d} after the checker fix" for i in range(40)
    ]
    data["identified_issues"] = {"layer2_problems": ["Tool A returns inconsistent JSON"] * 20}
    return json.dumps(data)


def _uncached(payload: Payload) -> Payload:
    def bare(item: Any) -> Any:
        return {k: v for k, v in item.items() if k != "cache_control"}

    out: Payload = {**payload}
    out["messages"] = [
        {"role": m["role"], "content": [bare(b) for b in m["content"]]}  # type: ignore[union-attr]
        for m in payload["messages"]
    ]
    if isinstance(payload.get("system"), list):
        out["system"] = [bare(b) for b in payload["system"]]  # type: ignore[union-attr]
    if "tools" in payload:
        out["tools"] = [bare(t) for t in payload["tools"]]
    return out


@dataclass
class Tally:
    billed: float = 0.0
    total: int = 0
    read: int = 0
    calls: int = 0
    compactions: int = 0
    fallbacks: int = 0


async def replay(
    rounds: list[SynthRound], strategy: ContextStrategy, budget: ContextBudget, *, cached: bool
) -> Tally:
    """Run the session through `strategy`, billing every request through one cache."""
    # The synthetic session takes no wall time, so the clock stands still: no entry expires,
    # and the figures do not depend on how fast this machine replays the session.
    cache = PrefixCache(clock=lambda: 0.0, stable_blocks=True)
    tally = Tally()
    summary = _summary()

    def send(payload: Payload) -> Usage:
        charge = cache.usage_for(payload if cached else _uncached(payload))
        tally.billed += charge.billed
        tally.total += charge.total
        tally.read += charge.cache_read_input_tokens
        tally.calls += 1
        return Usage(
            input_tokens=charge.input_tokens,
            cache_creation_input_tokens=charge.cache_creation_input_tokens,
            cache_read_input_tokens=charge.cache_read_input_tokens,
        )

    async def summarize(payload: Payload) -> str:
        send(payload)
        return summary

    conversation = Conversation()
    for round_ in rounds:
        conversation.start_round(round_.text)
        for step in round_.steps:
            usage = send(strategy.compose_payload(SYSTEM, TOOLS, conversation))
            output = estimate_message_tokens({"role": "assistant", "content": step.content})
            usage = usage.model_copy(update={"output_tokens": output})
            conversation.append_step(step.content, step.results, usage)
            strategy.on_turn_complete(conversation)
            if strategy.should_compact(conversation, budget):
                compaction = await strategy.compact(conversation, summarize)
                tally.compactions += 1
                tally.fallbacks += compaction.mode == "fallback"
    return tally


ROWS: list[tuple[str, str, dict[str, Any], bool]] = [
    ("seed-000 recomputed every turn (baseline)", "summarize", {}, False),
    ("summarize (seed 000, stride 1)", "summarize", {}, True),
    ("summarize, stride N", "summarize", {"stride": "N"}, True),
    ("sliding_window (greedy)", "sliding_window", {}, True),
    ("sliding_window, refill 0.5", "sliding_window", {"refill": 0.5}, True),
    ("extract_state (stride 1)", "extract_state", {}, True),
    ("extract_state, stride N", "extract_state", {"stride": "N"}, True),
]


async def table(agent: str, budget: ContextBudget, rounds: list[SynthRound]) -> None:
    print(
        f"\n{agent}: window {budget.context_window:,}, threshold {budget.compact_threshold:,}, "
        f"N={budget.keep_recent_steps}"
    )
    print(
        f"{'strategy':<42} {'billed M':>9} {'vs base':>8} {'calls':>6} {'compact':>8} "
        f"{'cache read':>10} {'mean req':>9}"
    )
    base = None
    for label, name, options, cached in ROWS:
        opts = {k: budget.keep_recent_steps if v == "N" else v for k, v in options.items()}
        strategy = make_strategy(name, budget, summary_schema=ExecuteSummary, **opts)
        tally = await replay(rounds, strategy, budget, cached=cached)
        base = base or tally.billed
        print(
            f"{label:<42} {tally.billed / 1e6:>9.2f} {tally.billed / base:>8.3f} "
            f"{tally.calls:>6} {tally.compactions:>8} {tally.read / max(1, tally.total):>10.1%} "
            f"{tally.total / max(1, tally.calls):>9,.0f}"
        )


async def run(steps: int, seed: int) -> None:
    rounds = session(steps, seed)
    tool_steps = sum(1 for r in rounds for s in r.steps if s.results)
    print(
        f"session: {len(rounds)} rounds, {sum(len(r.steps) for r in rounds)} steps "
        f"({tool_steps} with tool results of 1K-20K tokens), seed {seed}; "
        "billed = uncached + 1.25 x cache write + 0.1 x cache read"
    )
    for agent in ("execute", "init"):
        await table(agent, ContextBudget.for_agent(agent), rounds)
    # Seed 000's own budgets never reach their thresholds on this session (its assembly
    # drops old tool results), so a tight budget shows what compactions cost.
    tight = ContextBudget(context_window=100_000, compact_threshold=60_000, keep_recent_steps=3)
    await table("tight", tight, rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=320)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    anyio.run(run, args.steps, args.seed)


if __name__ == "__main__":
    main()
