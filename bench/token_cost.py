"""Billed input tokens of the configured context default against two plain assemblies.

Run: .venv/bin/python bench/token_cost.py [--seeds 5] [--rounds 30] [--steps 12]
                                          [--gaps realistic|short]

Each seeded session is `--rounds` rounds of `--steps` steps; every step but the last of a
round reads a file whose result is 1K-20K tokens (lognormal, median 4K; a fifth of them
Chinese). Simulated time passes, 5-40 s per step (model and tool) and a wait before each
round, so cache entries expire as they would. Every request, turns and summary calls alike,
is billed by `baton.context.prompt_cache.PrefixCache`, the one prompt-cache model of baton
(uncached 1x, cache write 1.25x for 5 minutes or 2x for an hour, cache read 0.1x, 20-block
lookback, 1,024-token minimum, entries refreshed by each request that reads through them).

The waits between rounds (`--gaps realistic`, the default) are each agent's in the
pipeline (docs/handoffs.md), drawn from a seeded stream of their own so the steps stay
the same whatever the gap model:

- Init: every round ends with a design that waits for a human's approval (or rejection)
  before Init hears back. The wait is lognormal, median 15 minutes (sigma 0.9: a tenth
  under 5 minutes, a tenth over 48, about 6% over an hour), clipped to 2 minutes-2 hours:
  people answer within minutes when they are at their desk and after a meeting or lunch
  when they are not, and a wait past two hours costs the same as one of two. (An approved
  design comes back to Init only after Execute's iteration, later still; with that added,
  more waits pass the hour and the 1-hour breakpoints save a little less.)
- Execute: two iterations in three go on at once on the same design (the Scheduler's own
  work in between: 20-360 s, uniform); one in three goes back to Init first, so Execute
  waits for Init's redesign (3-10 minutes, uniform) and its approval (as above).

`--gaps short` is the earlier model, 20-360 s before every round of both agents.

Assemblies, per agent (Execute and Init, each with its default budget):

- configured: the strategy and options of `[actors.<agent>]` in a default `baton.toml`
  (`BatonConfig`), built exactly as the agent builds it;
- per-turn strip: every step shown, its assistant text and tool calls kept, the tool results
  of all but the newest N steps replaced by a stub, re-cut every turn;
- keep all: every step whole until the threshold, then the summary compaction (these two
  are `baton.context.baselines`, which `baton cost --what-if` bills a real run under too);
- summarize, stride 1: the strategy's original per-turn rule, for reference;
- configured, 5-minute breakpoints only: the configured assembly without its 1-hour
  breakpoints (docs/context.md, "Prompt-cache breakpoints"), to show what they save;
- configured, earlier rounds not folded: the configured assembly keeping the newest N steps
  whole across a round's start (`fold_rounds=False`; docs/context.md, "summarize"), to show
  what folding the earlier rounds at a new round saves;
- per-turn strip, 1-hour breakpoints: the yardstick given baton's 1-hour breakpoints (its
  stubbed part is a history that stays put), to show a per-turn client would gain too.

The yardstick, per-turn strip, puts every breakpoint at 5 minutes, as a plain client does.

Printed: each session's billed input-token equivalents, the median over the sessions of
each assembly's ratio to per-turn stripping, the share of input read from the cache and
written to it for an hour. The synthetic steps carry no thinking blocks, so no round pins
its layout (docs/context.md, "Thinking"): the batches move as configured.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from baton.context._strategy_base import StrategyBase
from baton.context.baselines import KeepAll, PerTurnStrip
from baton.context.conversation import Conversation
from baton.context.payload import Payload
from baton.context.prompt_cache import CacheTTL, PrefixCache
from baton.context.registry import make_strategy
from baton.context.strategy import ContextBudget, ContextStrategy
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


GapModel = Literal["realistic", "short"]


def approval_wait(rng: random.Random) -> float:
    """Seconds a design waits for a human's approval: lognormal, median 15 minutes."""
    return 60 * min(120.0, max(2.0, rng.lognormvariate(math.log(15), 0.9)))


def with_gaps(rounds: list[SynthRound], agent: str, seed: int, model: GapModel) -> list[SynthRound]:
    """`rounds` with the waits before each round of `agent` drawn from `model`."""
    if model == "short":
        return rounds  # the session's own 20-360 s
    rng = random.Random(f"gaps:{agent}:{seed}")  # noqa: S311 - reproducible, not a secret
    for round_ in rounds:
        if agent == "init":
            round_.gap = approval_wait(rng)
        elif rng.random() < 2 / 3:
            round_.gap = rng.uniform(20, 360)  # the next iteration, on the same design
        else:
            round_.gap = 60 * rng.uniform(3, 10) + approval_wait(rng)  # redesigned first
    return rounds


@dataclass
class Tally:
    billed: float = 0.0
    total: int = 0
    read: int = 0
    hour: int = 0  # written to live an hour
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
        tally.hour += charge.cache_creation_1h_input_tokens
        tally.calls += 1
        return Usage(
            input_tokens=charge.input_tokens,
            cache_creation_input_tokens=charge.cache_creation_input_tokens,
            cache_read_input_tokens=charge.cache_read_input_tokens,
            cache_creation_1h_input_tokens=charge.cache_creation_1h_input_tokens,
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


def with_ttl(make: Factory, ttl: CacheTTL) -> Factory:
    """`make`, its breakpoints before the newest message living `ttl`."""

    def build() -> ContextStrategy:
        strategy = make()
        assert isinstance(strategy, StrategyBase)
        strategy.lasting_ttl = ttl
        return strategy

    return build


def assemblies(agent: str) -> tuple[str, ContextBudget, dict[str, Factory]]:
    """The agent's model, budget and the assemblies compared, the configured one as built."""
    config = BatonConfig().agent(agent)
    budget = ContextBudget.model_validate(config, from_attributes=True)
    schema = {"summary_schema": ExecuteSummary}
    options = config.strategy_options
    described = ", ".join(f"{k} = {v}" for k, v in options.items() if v is not None)

    def configured() -> ContextStrategy:
        return make_strategy(config.strategy, budget, **schema, **options)

    def per_turn() -> ContextStrategy:
        return PerTurnStrip(budget, summary_schema=ExecuteSummary)

    return (
        config.model,
        budget,
        {
            f"configured ({config.strategy}, {described})": configured,
            BASE: with_ttl(per_turn, "5m"),
            "keep all": lambda: KeepAll(budget, summary_schema=ExecuteSummary),
            "summarize, stride 1 (per-turn rule)": lambda: make_strategy(
                "summarize", budget, **schema
            ),
            "configured, 5-minute breakpoints only": with_ttl(configured, "5m"),
            "configured, earlier rounds not folded": lambda: make_strategy(
                config.strategy, budget, **schema, **options, fold_rounds=False
            ),
            "per-turn strip, 1-hour breakpoints": with_ttl(per_turn, "1h"),
        },
    )


BASE = "per-turn strip (keeps assistant text)"


async def agent_table(agent: str, sessions: list[list[SynthRound]]) -> None:
    model, budget, rows = assemblies(agent)
    print(
        f"\n{agent} ({model}): threshold {budget.compact_threshold:,}, "
        f"N = {budget.keep_recent_steps}"
    )
    width = max(64, *(len(label) for label in rows))
    print(
        f"{'assembly':<{width}} {'billed M per session':>30} {'median ratio':>13} "
        f"{'cache read':>10} {'1h write':>8} {'compact':>8}"
    )
    tallies = {
        label: [await replay(s, make(), model) for s in sessions] for label, make in rows.items()
    }
    for label, runs in tallies.items():
        ratios = [t.billed / b.billed for t, b in zip(runs, tallies[BASE], strict=True)]
        total = max(1, sum(t.total for t in runs))
        read = sum(t.read for t in runs) / total
        hour = sum(t.hour for t in runs) / total
        billed = " ".join(f"{t.billed / 1e6:5.1f}" for t in runs)
        print(
            f"{label:<{width}} {billed:>30} {statistics.median(ratios):>12.3f}x "
            f"{read:>10.1%} {hour:>8.1%} {sum(t.compactions for t in runs):>8}"
        )


async def run(seeds: int, rounds: int, steps: int, gaps: GapModel) -> None:
    print(
        f"{seeds} sessions (seeds 0-{seeds - 1}) of {rounds} rounds x {steps} steps, tool "
        f"results 1K-20K tokens (lognormal), {gaps} waits between rounds; billed = uncached "
        "+ 1.25 x 5-minute write + 2 x 1-hour write + 0.1 x cache read; ratios are to "
        "per-turn stripping"
    )
    for agent in ("execute", "init"):
        sessions = [
            with_gaps(session(rounds, steps, seed), agent, seed, gaps) for seed in range(seeds)
        ]
        await agent_table(agent, sessions)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--gaps", choices=("realistic", "short"), default="realistic")
    args = parser.parse_args()
    anyio.run(run, args.seeds, args.rounds, args.steps, args.gaps)


if __name__ == "__main__":
    main()
