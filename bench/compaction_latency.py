"""Compaction latency: how much of the summary calls' time the agents spend waiting.

Run: python bench/compaction_latency.py [--summary-delay 2.0] [--turn-delay 0.5] [--seeds 3]
The shipped leave_application scenario, played by the offline scripted model: every summary
call answers after `--summary-delay` seconds, every other call after a delay drawn from
[0.5, 1.5] x `--turn-delay` (seeded). Once with the default config (the summary asked for in
the background past `precompact_at`, docs/context.md "Background compaction"), once with
`precompact_at = 1` for both agents (asked for at the threshold: the baseline). For each, the
share of the summary calls' latency the agents waited (the `context.compacted` lines'
`waited_ms` over the wall time of the summary calls), and the wall
time of the run; medians over the seeds, and their ratios to the baseline. Goal: a share of
at most 10%.
"""

from __future__ import annotations

import argparse
import logging
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import structlog

from baton import Runtime
from baton.context.payload import Payload
from baton.models.protocol import ModelResponse, current_call
from baton.pipeline.host import open_pipeline
from baton.pipeline.messages import ScenarioQuery, StartScenario
from baton.pipeline.offline_model import OfflineModel
from baton.pipeline.scenario_state import ScenarioState
from baton.testing import read_token_log

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = "leave_application"
BASELINE = "".join(f"[actors.{a}]\nprecompact_at = 1\n" for a in ("init", "execute"))


SUMMARY_CALLS: list[float] = []  # each summary call's wall time, in milliseconds


def with_latency(summary_delay: float, turn_delay: float, rng: random.Random) -> None:
    """Make every offline call answer after its delay (the model's latency)."""
    original = getattr(OfflineModel.create, "__wrapped__", OfflineModel.create)

    async def create(model: OfflineModel, payload: Payload) -> ModelResponse:
        call = current_call()
        summary = call is not None and call.purpose == "compaction"
        started = time.perf_counter()
        delay = summary_delay if summary else turn_delay * rng.uniform(0.5, 1.5)
        await anyio.sleep(delay)  # the model's latency, not a wait for a condition
        response = await original(model, payload)
        if summary:
            SUMMARY_CALLS.append((time.perf_counter() - started) * 1000)
        return response

    create.__wrapped__ = original  # type: ignore[attr-defined]
    OfflineModel.create = create  # type: ignore[method-assign]
    # With latency it is no longer the offline model that answers at once: the agents treat
    # it as they treat Claude (docs/context.md, "Background compaction").
    OfflineModel.answers_at_once = False


async def run_shipped(ws: Path, config: str = "") -> tuple[list[dict[str, Any]], float]:
    """Run the shipped scenario to its end in the empty folder `ws` with `config` as its
    baton.toml: its token-log lines, and the seconds from the runtime's start to the end."""
    folder = ws / "scenarios" / SHIPPED
    folder.mkdir(parents=True)
    for file in ("offline_script.json", "scenario.toml"):
        (folder / file).write_bytes((ROOT / "scenarios" / SHIPPED / file).read_bytes())
    (ws / "baton.toml").write_text(config)
    started = time.perf_counter()
    async with Runtime.open(ws) as rt, open_pipeline(rt, environ={}):
        await rt.ask("scheduler", StartScenario(scenario=SHIPPED, auto_approve=True))
        while True:
            state = await rt.ask("scheduler", ScenarioQuery(scenario=SHIPPED))
            assert isinstance(state, ScenarioState)
            if state.phase in ("completed", "failed"):
                break
            await anyio.sleep(0.05)  # a benchmark's poll: 50 ms is its resolution
    elapsed = time.perf_counter() - started
    assert state.phase == "completed", state
    return read_token_log(ws), elapsed


async def run(config: str) -> dict[str, Any]:
    SUMMARY_CALLS.clear()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        lines, elapsed = await run_shipped(ws, config)
    summaries = list(SUMMARY_CALLS)
    compacted = [r for r in lines if r.get("event") == "context.compacted"]
    waited = sum(r["waited_ms"] for r in compacted)
    return {
        "share": waited / sum(summaries) if summaries else 0.0,
        "seconds": elapsed,
        "compactions": len(compacted),
        "summary_calls": len(summaries),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--summary-delay", type=float, default=2.0)
    parser.add_argument("--turn-delay", type=float, default=0.5)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--precompact-at", type=float, help="try another value (default: the configured one)"
    )
    parser.add_argument("--skip-baseline", action="store_true")
    args = parser.parse_args()
    tried = (
        ""
        if args.precompact_at is None
        else "".join(
            f"[actors.{a}]\nprecompact_at = {args.precompact_at}\n" for a in ("init", "execute")
        )
    )
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    results: dict[str, list[dict[str, Any]]] = {"default": [], "baseline": []}
    for seed in range(args.seeds):
        for name, config in (("baseline", BASELINE), ("default", tried)):
            if name == "baseline" and args.skip_baseline:
                continue
            with_latency(args.summary_delay, args.turn_delay, random.Random(seed))  # noqa: S311
            result = anyio.run(run, config)
            results[name].append(result)
            print(
                f"seed {seed} {name:8}: waited {result['share']:6.1%} of the summary calls' "
                f"time · {result['seconds']:6.1f} s · {result['compactions']} compactions, "
                f"{result['summary_calls']} summary calls",
                flush=True,
            )
    share = {k: statistics.median(r["share"] for r in v) for k, v in results.items()}
    seconds = {k: statistics.median(r["seconds"] for r in v) for k, v in results.items()}
    print(
        f"median of {args.seeds}: waited {share['default']:.1%} of the summary time "
        f"(baseline {share['baseline']:.1%}; ratio {share['default'] / share['baseline']:.3f}); "
        f"run {seconds['default']:.1f} s vs {seconds['baseline']:.1f} s "
        f"(ratio {seconds['default'] / seconds['baseline']:.3f}); goal: at most 10%"
    )


if __name__ == "__main__":
    main()
