"""Summaries asked for against summaries applied, on the shipped scenario.

Run: .venv/bin/python bench/summaries_asked.py [--seeds 3] [--summary-delay 0.3]

The shipped leave_application scenario, played by the offline scripted model: once as it
answers (at once, so the agents wait at the threshold), then with every summary call
answering after `--summary-delay` seconds and every other call after a seeded delay (as
`bench/compaction_latency.py` plays it, so the agents go on while a summary is written). Per
agent, the summary calls made (`model.call` lines with `purpose: compaction`) against the
compactions applied (`context.compacted` lines): a summary asked for and never applied was
paid for for nothing. A strip batch due soon enough to take the context back under the
threshold asks for none (docs/context.md, "Background compaction").
"""

from __future__ import annotations

import argparse
import logging
import random
import statistics
import tempfile
from collections import Counter
from pathlib import Path

import anyio
import structlog
from compaction_latency import run_shipped, with_latency

AGENTS = ("init", "execute")


async def run() -> tuple[Counter[str], Counter[str]]:
    """One run of the shipped scenario: summaries asked and compactions applied, per agent."""
    with tempfile.TemporaryDirectory() as tmp:
        lines, _ = await run_shipped(Path(tmp))
    asked = Counter(
        str(r.get("actor"))
        for r in lines
        if r.get("event") == "model.call" and r.get("purpose") == "compaction"
    )
    applied = Counter(str(r.get("actor")) for r in lines if r.get("event") == "context.compacted")
    return asked, applied


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--summary-delay", type=float, default=0.3)
    parser.add_argument("--turn-delay", type=float, default=0.05)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    asked, applied = anyio.run(run)
    cells = ", ".join(f"{a} {asked[a]} asked / {applied[a]} applied" for a in AGENTS)
    print(f"offline, answered at once: {cells}", flush=True)
    totals: list[tuple[int, int]] = []
    for seed in range(args.seeds):
        with_latency(args.summary_delay, args.turn_delay, random.Random(seed))  # noqa: S311
        asked, applied = anyio.run(run)
        totals.append((sum(asked.values()), sum(applied.values())))
        cells = ", ".join(f"{a} {asked[a]} asked / {applied[a]} applied" for a in AGENTS)
        print(f"seed {seed}, summaries after {args.summary_delay:g} s: {cells}", flush=True)
    median_asked = statistics.median(t[0] for t in totals)
    median_applied = statistics.median(t[1] for t in totals)
    print(
        f"with latency, median of {args.seeds}: {median_asked:g} asked / {median_applied:g} "
        f"applied (range asked {min(t[0] for t in totals)}-{max(t[0] for t in totals)}, "
        f"applied {min(t[1] for t in totals)}-{max(t[1] for t in totals)})"
    )


if __name__ == "__main__":
    main()
