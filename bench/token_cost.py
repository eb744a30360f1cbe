"""Billed input tokens of the configured context default against two plain assemblies.

Run: .venv/bin/python bench/token_cost.py [--seeds 5] [--rounds 30] [--steps 12]

Each seeded session is `--rounds` rounds of `--steps` steps; every step but the last of a
round reads a file whose result is 1K-20K tokens (lognormal, median 4K; a fifth of them
Chinese). Simulated time passes: 5-40 s per step (model and tool), 20-360 s between rounds,
so cache entries older than 5 minutes expire as they would. Every request, turns and
summary calls alike, is billed by `baton.context.prompt_cache.PrefixCache`, the one
prompt-cache model of baton (uncached 1x, cache write 1.25x, cache read 0.1x, 20-block
lookback, 1,024-token minimum, 5-minute entries refreshed on each read).

Assemblies, per agent (Execute and Init, each with its default budget):

- configured: the strategy and options of `[actors.<agent>]` in a default `baton.toml`
  (`BatonConfig`), built exactly as the agent builds it;
- per-turn strip: every step shown, its assistant text and tool calls kept, the tool results
  of all but the newest N steps replaced by a stub, re-cut every turn;
- keep all: every step whole until the threshold, then the summary compaction;
- summarize, stride 1: the strategy's original per-turn rule, for reference.

Printed: each session's billed input-token equivalents, and the median over the sessions of
each assembly's ratio to per-turn stripping. The synthetic steps carry no thinking blocks, so
no round pins its layout (docs/context.md, "Thinking"): the batches move as configured.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from baton.context._assembly import Builder, add_rounds_from
from baton.context.caching import Anchor
from baton.context.conversation import Conversation
from baton.context.payload import Message, Payload
from baton.context.prompt_cache import PrefixCache
from baton.context.registry import make_strategy
from baton.context.strategy import ContextBudget, ContextStrategy
from baton.context.summarize import SummarizeStrategy
from baton.context.tokens import estimate_message_tokens
from baton.context.usage import Usage
from baton.pipeline.config import BatonConfig
from baton.pipeline.summaries import ExecuteSummary

SYSTEM = "You are the Execute Agent: generate tools, checkers and samples; evaluate. " * 60
TOOLS: list[Any] = [
    {
        "name": name,
        "description": f"{name} a workspace file. " * 20,
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    for name in ("Read", "Write", "List")
]
STUB = "[tool result stripped from the history]"


@dataclass
class SynthStep:
    content: list[dict[str, Any]]
    results: list[dict[str, Any]]
    seconds: float  # simulated time the model call and its tools take


@dataclass
class SynthRound:
    text: str
    gap: float  # simulated seconds before the round starts
    steps: list[SynthStep] = field(default_factory=list)


def result_tokens(rng: random.Random) -> int:
    """A tool result size: lognormal around 4K tokens, kept within 1K-20K."""
    return min(20_000, max(1_000, round(rng.lognormvariate(math.log(4_000), 0.8))))


def session(rounds: int, steps: int, seed: int) -> list[SynthRound]:
    """A deterministic session: `rounds` rounds of `steps` steps, the last a final answer."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible synthetic session, not a secret
    out: list[SynthRound] = []
    tool_n = 0
    for r in range(rounds):
        round_ = SynthRound(f"Iteration {r}: fix the failing samples. " * 20, rng.uniform(20, 360))
        for k in range(steps):
            words = " ".join(rng.choice(("trace", "checker", "layer", "sample")) for _ in range(60))
            seconds = rng.uniform(5, 40)
            if k == steps - 1:
                text = f"Iteration {r} done; success 12/15. {words}"
                round_.steps.append(SynthStep([{"type": "text", "text": text}], [], seconds))
                continue
            tool_n += 1
            tool_id = f"toolu_{tool_n}"
            path = f"scenarios/leave/execution_outputs/iteration_{r}/trace_{k}.json"
            tokens = result_tokens(rng)
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
                    seconds,
                )
            )
        out.append(round_)
    return out


class PerTurnStrip(SummarizeStrategy):
    """Every step shown; the tool results of all but the newest N stubbed, re-cut each turn."""

    name = "per-turn-strip"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stubs: dict[int, tuple[Message, int]] = {}

    def _advance(self, conversation: Conversation) -> None:
        return

    def _stubbed(self, seq: int, ids: list[str]) -> tuple[Message, int]:
        if seq not in self._stubs:  # the same objects every turn, as a real assembly keeps
            message: Message = {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": i, "content": STUB} for i in ids
                ],
            }
            self._stubs[seq] = (message, estimate_message_tokens(message))
        return self._stubs[seq]

    def _body(self, conversation: Conversation, builder: Builder) -> list[Anchor | None]:
        entries = conversation.entries
        whole_from = len(entries) - self.budget.keep_recent_steps
        rounds = conversation.round_entries
        stripped_end: Anchor | None = None
        i = 0
        for r in range(len(rounds)):
            builder.add(rounds[r].message, rounds[r].tokens)
            while i < len(entries) and entries[i].round_index == r:
                entry = entries[i]
                builder.add(entry.assistant, entry.assistant_tokens)
                if i < whole_from and entry.results is not None:
                    builder.add(
                        *self._stubbed(entry.step.seq, [u.id for u in entry.step.tool_uses])
                    )
                    stripped_end = builder.end_anchor()
                else:
                    builder.add(entry.results, entry.results_tokens)
                i += 1
        # A breakpoint at the end of the stubbed part, as baton puts one at the end of its
        # history: the next turn finds this turn's stubbed prefix within the 20-block
        # lookback and rewrites only from the newly stubbed step on.
        return [stripped_end]


class KeepAll(SummarizeStrategy):
    """Every step whole until the threshold; then the same summary compaction."""

    name = "keep-all"

    def _advance(self, conversation: Conversation) -> None:
        return

    def _body(self, conversation: Conversation, builder: Builder) -> list[Anchor | None]:
        add_rounds_from(builder, conversation, 0)
        return []


@dataclass
class Tally:
    billed: float = 0.0
    total: int = 0
    read: int = 0
    calls: int = 0
    compactions: int = 0


def _summary() -> str:
    data = ExecuteSummary.empty()
    data["pending_work"] = [
        f"re-run failing sample_{i:03d} after the checker fix" for i in range(40)
    ]
    data["identified_issues"] = {"layer2_problems": ["Tool A returns inconsistent JSON"] * 20}
    return json.dumps(data)


async def replay(rounds: list[SynthRound], strategy: ContextStrategy, model: str) -> Tally:
    """Run the session through `strategy`, billing every request through one cache."""
    now = [0.0]
    cache = PrefixCache(clock=lambda: now[0], stable_blocks=True)
    tally = Tally()
    summary = _summary()

    def send(payload: Payload) -> Usage:
        charge = cache.usage_for(payload, model)
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
        now[0] += round_.gap
        conversation.start_round(round_.text)
        for step in round_.steps:
            usage = send(strategy.compose_payload(SYSTEM, TOOLS, conversation))
            now[0] += step.seconds
            output = estimate_message_tokens({"role": "assistant", "content": step.content})
            usage = usage.model_copy(update={"output_tokens": output})
            conversation.append_step(step.content, step.results, usage)
            strategy.on_turn_complete(conversation)
            if strategy.should_compact(conversation):
                await strategy.compact(conversation, summarize)
                tally.compactions += 1
    return tally


Factory = Callable[[], ContextStrategy]


def assemblies(agent: str) -> tuple[str, ContextBudget, dict[str, Factory]]:
    """The agent's model, budget and the assemblies compared, the configured one as built."""
    config = BatonConfig().agent(agent)
    budget = ContextBudget.model_validate(config, from_attributes=True)
    schema = {"summary_schema": ExecuteSummary}
    options = config.strategy_options
    described = ", ".join(f"{k} = {v}" for k, v in options.items() if v is not None)
    return (
        config.model,
        budget,
        {
            f"configured ({config.strategy}, {described})": lambda: make_strategy(
                config.strategy, budget, **schema, **options
            ),
            "per-turn strip (keeps assistant text)": lambda: PerTurnStrip(
                budget, summary_schema=ExecuteSummary
            ),
            "keep all": lambda: KeepAll(budget, summary_schema=ExecuteSummary),
            "summarize, stride 1 (per-turn rule)": lambda: make_strategy(
                "summarize", budget, **schema
            ),
        },
    )


BASE = "per-turn strip (keeps assistant text)"


async def agent_table(agent: str, sessions: list[list[SynthRound]]) -> None:
    model, budget, rows = assemblies(agent)
    print(
        f"\n{agent} ({model}): threshold {budget.compact_threshold:,}, "
        f"N = {budget.keep_recent_steps}"
    )
    print(
        f"{'assembly':<64} {'billed M per session':>30} {'median ratio':>13} "
        f"{'cache read':>10} {'compact':>8}"
    )
    tallies = {
        label: [await replay(s, make(), model) for s in sessions] for label, make in rows.items()
    }
    for label, runs in tallies.items():
        ratios = [t.billed / b.billed for t, b in zip(runs, tallies[BASE], strict=True)]
        read = sum(t.read for t in runs) / max(1, sum(t.total for t in runs))
        billed = " ".join(f"{t.billed / 1e6:5.1f}" for t in runs)
        print(
            f"{label:<64} {billed:>30} {statistics.median(ratios):>12.3f}x "
            f"{read:>10.1%} {sum(t.compactions for t in runs):>8}"
        )


async def run(seeds: int, rounds: int, steps: int) -> None:
    sessions = [session(rounds, steps, seed) for seed in range(seeds)]
    print(
        f"{seeds} sessions (seeds 0-{seeds - 1}) of {rounds} rounds x {steps} steps, tool "
        "results 1K-20K tokens (lognormal); billed = uncached + 1.25 x cache write + 0.1 x "
        "cache read, 5-minute entries; ratios are to per-turn stripping"
    )
    for agent in ("execute", "init"):
        await agent_table(agent, sessions)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    anyio.run(run, args.seeds, args.rounds, args.steps)


if __name__ == "__main__":
    main()
