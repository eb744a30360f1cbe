"""Scenarios at once: N copies of leave_application submitted together to one pipeline.

Run: python bench/scenarios.py [--scenarios 1 8] [--delay 0.5] [--keys K] [--mailbox M]
Each copy is the shipped scenario under another name (leave_00, leave_01, ...), played by the
offline scripted model, every call of which answers after `--delay` seconds (a model's
latency), with at most `max_concurrency` calls in flight per model, as the Anthropic client
allows. Everything else is the default configuration (the SQLite mailbox, the agents'
`max_concurrent_keys`), unless `--keys` or `--mailbox` says otherwise. Prints, per N, the
time from the first submit to the last scenario's end, the model calls made, and the ratio
to N = 1 (goal: 8 scenarios in at most 1.5x the time of one). The agents are keyed by
conversation (docs/architecture.md, "Keyed actors"), so their rounds overlap; `--keys 1`
runs them one conversation at a time, for comparison.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path

import anyio
import structlog

from baton import Runtime
from baton.context.payload import Payload
from baton.models.protocol import ModelResponse, current_call
from baton.pipeline.config import BatonConfig
from baton.pipeline.host import AGENTS, model_concurrency, open_pipeline
from baton.pipeline.messages import ScenarioQuery, StartScenario
from baton.pipeline.offline_model import OfflineModel
from baton.pipeline.scenario_state import ScenarioState

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = "leave_application"


def workspace(root: Path, names: list[str], *, keys: int | None, mailbox: str | None) -> Path:
    """A workspace holding the shipped scenario once per name, every path renamed."""
    source = ROOT / "scenarios" / SHIPPED
    for name in names:
        folder = root / "scenarios" / name
        folder.mkdir(parents=True)
        for file in ("offline_script.json", "scenario.toml"):
            text = (source / file).read_text(encoding="utf-8")
            (folder / file).write_text(text.replace(SHIPPED, name), encoding="utf-8")
    config = "" if mailbox is None else f'[runtime]\nmailbox = "{mailbox}"\n'
    if keys is not None:
        config += "".join(
            f"[actors.{a}]\nmax_concurrent_keys = {keys}\n" for a in ("init", "execute")
        )
    (root / "baton.toml").write_text(config)
    return root


def with_latency(delay: float) -> list[int]:
    """Make every offline call answer after `delay` seconds, with no more calls in flight per
    model than the default configuration's clients allow; returns the call counter."""
    original = OfflineModel.create
    calls = [0]
    deployment = BatonConfig()
    limiters = {
        model: anyio.CapacityLimiter(size)
        for model, size in model_concurrency(deployment, AGENTS).items()
    }

    async def create(model: OfflineModel, payload: Payload) -> ModelResponse:
        calls[0] += 1
        call = current_call()
        assert call is not None
        async with limiters[deployment.agent(call.actor).model]:
            await anyio.sleep(delay)  # the model's latency, not a wait for a condition
        return await original(model, payload)

    OfflineModel.create = create  # type: ignore[method-assign]
    return calls


async def run(
    n: int, *, keys: int | None, mailbox: str | None, calls: list[int]
) -> tuple[float, int, str]:
    names = [f"leave_{i:02d}" for i in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        ws = workspace(Path(tmp), names, keys=keys, mailbox=mailbox)
        async with Runtime.open(ws) as rt, open_pipeline(rt, environ={}):
            before = calls[0]
            started = time.perf_counter()
            for name in names:
                await rt.ask("scheduler", StartScenario(scenario=name, auto_approve=True))
            while True:
                states = []
                for name in names:
                    state = await rt.ask("scheduler", ScenarioQuery(scenario=name))
                    assert isinstance(state, ScenarioState)
                    states.append(state)
                if all(s.phase in ("completed", "failed") for s in states):
                    break
                await anyio.sleep(0.05)  # a benchmark's poll: 50 ms is its resolution
            elapsed = time.perf_counter() - started
            phases = ",".join(sorted({s.phase for s in states}))
            return elapsed, calls[0] - before, phases


async def main(counts: list[int], delay: float, keys: int | None, mailbox: str | None) -> None:
    calls = with_latency(delay)
    agent = BatonConfig().agent("execute")
    print(
        f"delay {delay:g} s per model call, max_concurrency {agent.max_concurrency} per model, "
        f"max_concurrent_keys {keys or agent.max_concurrent_keys}, "
        f"mailbox {mailbox or BatonConfig().runtime.mailbox}"
    )
    print(f"{'scenarios':>9}  {'seconds':>8}  {'calls':>6}  {'vs one':>6}  phases")
    one: float | None = None
    for n in counts:
        elapsed, made, phases = await run(n, keys=keys, mailbox=mailbox, calls=calls)
        if n == 1:
            one = elapsed
        ratio = f"{elapsed / one:.2f}" if one else "-"
        print(f"{n:>9}  {elapsed:>8.1f}  {made:>6}  {ratio:>6}  {phases}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--keys", type=int, help="max_concurrent_keys (default: configured)")
    parser.add_argument("--mailbox", help="runtime.mailbox (default: configured)")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    anyio.run(main, args.scenarios, args.delay, args.keys, args.mailbox)
