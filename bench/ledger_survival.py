"""How many key facts survive forgetful compactions, per strategy and kind of fact.

Run: .venv/bin/python bench/ledger_survival.py [--baseline] [--reads N] [--seeds N]
                                               [--per-kind N]

Init (offline scripted model, real agent loop, journal and tools) gets a work order with an
execute_to_init package and a ticket id in its task, reads a file naming a sample id, writes
its design and hands off; a second work order then reads a large file N times, so the
conversation compacts about once per read, every summary forgetting everything (a valid
summary with empty sections, or text with no JSON for the fallback). Every turn request
after the first compaction is searched for each fact verbatim (docs/context.md, "Key-fact
ledger"). `server` runs as the offline model plays the Messages API's compaction: its
extractive summary keeps a fact only where the text it extracts holds it, and baton carries
the ones it lacks beside its block; the API's least threshold (50,000), every step whole,
four reads per compaction.

Two tables. The registered facts: the share found per kind of fact the runtime registers by
name (package paths and ids, dispatch ids, written paths, a configured pattern's ids). The
held-out probe (`_fact_probe.py`): per seed, facts of every kind the built-in patterns look
for (ids, hashes, dates and times, UTC offsets, paths, URLs, emails, amounts), written into
the first work order's text and two files Init reads, never registered by name; `present`
is the share of (fact, request) pairs found, `every` the share of facts found in every
request after every compaction, over all seeds.

`--baseline` switches off what the ledger registers and shows beyond the handoff tool's
and Write's paths (work-order ids and package facts, pattern ids, sliding_window's ledger
turn), which is how baton behaved before they existed: the figures to compare against.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from _fact_probe import KINDS, Probe, make_probe

from baton import Runtime
from baton.agents import agent_loop as agent_loop_module
from baton.agents.agent_config import AgentConfig
from baton.agents.journal import FileJournalStore
from baton.context import sliding_window as sliding_window_module
from baton.models.scripted import Script, ScriptedModel
from baton.pipeline import reports as reports_module
from baton.pipeline import roles as roles_module
from baton.pipeline.agent_context import AgentContext
from baton.pipeline.messages import Dispatch, HandoffDelivered, RoundEnded
from baton.pipeline.packages import ExecuteToInitContext
from baton.pipeline.roles import InitActor, agent_setup
from baton.pipeline.summaries import InitSummary
from baton.runtime.actor import Actor, handler
from baton.runtime.logging import configure_logging
from baton.testing import capture_token_log

ITERATION = "scenarios/leave/execution_outputs/iteration_1"
DESIGN = {
    "unified_scenario_design_path": "scenarios/leave/unified_scenario_design.yaml",
    "business_rules_path": "scenarios/leave/BusinessRules.md",
    "format_specifications_path": "scenarios/leave/format_specifications.json",
}
FACTS: dict[str, list[str]] = {
    "received package paths": [
        ITERATION,
        f"{ITERATION}/samples/BS_MT_007.json",
        f"{ITERATION}/layer1_problems_report.json",
    ],
    "received package ids": ["BS_MT_007"],
    "dispatch ids": ["leave#1", "leave#2"],
    "written / sent paths": list(DESIGN.values()),
    "id in a user message": ["TICKET-4711"],
    "id in a tool result": ["BS_MT_042"],
}
STRATEGIES = (
    ("summarize", "forgetful"),
    ("summarize", "not_json"),
    ("sliding_window", "forgetful"),
    ("extract_state", "forgetful"),
    # The server's compaction, as the offline model plays it: an extractive summary that
    # keeps a fact only where its text happens to hold it (docs/context.md, "Server-side
    # context management"); the API's least threshold, and reads to pass it each time.
    ("server", "extractive"),
)


class _Scheduler(Actor):
    """Takes the handoff and the round end so the rounds can end."""

    @handler
    async def delivered(self, message: HandoffDelivered) -> None:
        """Nothing to do with it here."""

    @handler
    async def ended(self, message: RoundEnded) -> None:
        """Nor with this."""


@dataclass
class Outcome:
    """One run: its compactions and the requests after the first, per fact how many of those
    it was in and how many it was due in, and every value its patterns registered."""

    compactions: int
    requests: int
    found: dict[str, tuple[int, int]]
    by_pattern: list[str]


def _package() -> ExecuteToInitContext:
    return ExecuteToInitContext(
        timestamp="2026-11-23T10:00:00Z",
        execution_output_dir=ITERATION,
        trigger_reason="layer-1 problems",
        iteration_summary={"total_samples": 20, "failed_samples": 3},
        failure_samples_index=[{"sample_id": "BS_MT_007", "sample_path": "samples/BS_MT_007.json"}],
        layer1_problems_report_path="layer1_problems_report.json",
        modification_suggestions_summary=["state the carry-over rule"],
    )


def _model(reads: int, summary: str, probe_files: list[str]) -> ScriptedModel:
    def tool(name: str, **args: Any) -> dict[str, Any]:
        return {"tool_use": {"name": name, "input": args}}

    forgetful: dict[str, Any] | str = (
        InitSummary.empty() if summary == "forgetful" else "I forgot everything."
    )
    turns: list[Any] = [
        tool("Read", path="scenarios/leave/notes.txt"),
        *[tool("Read", path=f"scenarios/leave/{name}") for name in probe_files],
        {
            "tool_use": [
                tool("Write", path=p, content="x: 1\n")["tool_use"] for p in DESIGN.values()
            ]
        },
        tool("handoff_to_execute", user_requirement="请假申请", design_artifacts=DESIGN),
        "Handed off.",
        *[tool("Read", path="scenarios/leave/big.txt") for _ in range(reads)],
        "Done.",
    ]
    actor = {"turns": turns, "compactions": [forgetful] * (reads + 5)}
    return ScriptedModel(Script.model_validate({"actors": {"init": actor}}))


async def _run(strategy: str, summary: str, reads: int, probe: Probe) -> Outcome:
    server = strategy == "server"
    if server:
        reads *= 4  # a read is at most ~12K tokens (the Read tool's cap): four per compaction
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        leave = workspace / "scenarios" / "leave"
        leave.mkdir(parents=True)
        (leave / "notes.txt").write_text("BS_MT_042 failed the balance checker\n")
        for name, text in probe.files.items():
            (leave / name).write_text(text)
        rows = 2_000 if server else 300
        (leave / "big.txt").write_text("\n".join(f"row {n}: {'y' * 90}" for n in range(rows)))
        model = _model(reads, summary, list(probe.files))
        config = AgentConfig.model_validate(
            {
                "model": "claude-opus-4-5",
                "context_window": 400_000 if server else 40_000,
                "compact_threshold": 50_000 if server else 6_000,
                # The server compacts the whole history: every step whole until it does.
                "stride": 100 if server else 1,
                "keep_recent_steps": 2,
                "max_output_tokens": 1_000,
                # Every read of the large file arrives whole: one compaction per read.
                "load_budget_tokens": 1_000_000,
                "strategy": strategy,
                "fact_patterns": [r"TICKET-\d+"],
            }
        )
        async with Runtime.open(workspace) as rt:
            await rt.spawn("scheduler", _Scheduler)
            setup = agent_setup(
                "init",
                config,
                workspace=workspace,
                model=model,
                journal=FileJournalStore(workspace),
                token_log=rt.token_log,
            )
            await rt.spawn("init", InitActor, setup)
            with capture_token_log() as lines:
                tasks = (f"review the failures of TICKET-4711\n\n{probe.user}", "read big.txt")
                for n, task in enumerate(tasks, start=1):
                    order = Dispatch(
                        scenario="leave",
                        agent_context=AgentContext(task_summary=task),
                        package=_package() if n == 1 else None,
                        dispatch_id=f"leave#{n}",
                    )
                    await rt.ask("init", order)
        records = await FileJournalStore(workspace).read("init", "leave")
    found_by_pattern = [
        fact["value"]
        for record in records
        if record.get("type") == "facts"
        for fact in record["facts"]
        if fact.get("origin") is not None
    ]
    compactions = [i for i, line in enumerate(lines) if line["event"] == "context.compacted"]
    later = {
        line["turn"]
        for line in lines[compactions[0] :]
        if line["event"] == "model.call" and line["purpose"] == "turn"
    }
    requests = [
        (
            call.context.turn,
            json.dumps([call.payload.get("system"), call.payload["messages"]], ensure_ascii=False),
        )
        for call in model.calls
        if call.context.purpose == "turn"
    ]
    facts = {fact for values in FACTS.values() for fact in values}
    facts.update(value for _, value in probe.values)
    found: dict[str, tuple[int, int]] = {}
    for fact in facts:
        # A fact is due in every request after the first compaction from the first request
        # that showed it on (a file read after a compaction cannot be in the requests before).
        first = next((i for i, (_, text) in enumerate(requests) if fact in text), 0)
        due = [text for i, (turn, text) in enumerate(requests) if turn in later and i >= first]
        found[fact] = (sum(fact in text for text in due), len(due))
    shown = [text for turn, text in requests if turn in later]
    return Outcome(len(compactions), len(shown), found, found_by_pattern)


def _baseline() -> None:
    """Register and show only what the handoff tool and Write registered before."""
    roles_module.dispatch_facts = lambda message: []  # type: ignore[assignment]
    reports_module.SchedulerReports.facts = lambda self, package: []  # type: ignore[method-assign]
    original = agent_loop_module.FactPatterns
    agent_loop_module.FactPatterns = lambda patterns: original([], kinds=())  # type: ignore[assignment,misc]
    sliding_window_module.ledger_message = lambda ledger, **_: None  # type: ignore[assignment]


def _share(outcomes: list[tuple[Outcome, list[str]]]) -> tuple[float, float]:
    """(share of (fact, request) pairs found, share of facts found in every request)."""
    pairs = [o.found[f] for o, facts in outcomes for f in facts]
    present = sum(found for found, _ in pairs) / max(1, sum(due for _, due in pairs))
    return present, sum(found == due for found, due in pairs) / len(pairs)


def main() -> None:
    """Print the registered facts' table, then the probe's, one row per strategy."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", action="store_true", help="the ledger before this change")
    parser.add_argument("--reads", type=int, default=12, help="large reads in the second round")
    parser.add_argument("--seeds", type=int, default=5, help="probe seeds (runs) per strategy")
    parser.add_argument("--per-kind", type=int, default=4, help="probe facts of each kind")
    args = parser.parse_args()
    # The agents' log lines would bury the table; the token log is captured either way.
    configure_logging(stream=open(os.devnull, "w"))  # noqa: SIM115 - open for the whole run
    if args.baseline:
        _baseline()
    probes = [make_probe(seed, per_kind=args.per_kind) for seed in range(args.seeds)]
    results = {
        (strategy, summary): [
            anyio.run(_run, strategy, summary, args.reads, probe) for probe in probes
        ]
        for strategy, summary in STRATEGIES
    }
    _registered_table(results)
    print()
    _probe_table(results, probes)


def _registered_table(results: dict[tuple[str, str], list[Outcome]]) -> None:
    """The facts registered by name: per strategy, the share found per kind of fact."""
    groups = list(FACTS)
    print("Registered facts, share of (fact, request) pairs found after the first compaction")
    print("| strategy | summary | compactions | requests | " + " | ".join(groups) + " | all |")
    print("|---" * (len(groups) + 5) + "|")
    for (strategy, summary), outcomes in results.items():
        shares = [_share([(o, FACTS[g]) for o in outcomes])[0] for g in groups]
        total = _share([(o, [f for g in groups for f in FACTS[g]]) for o in outcomes])[0]
        compactions = "/".join(sorted({str(o.compactions) for o in outcomes}))
        requests = sum(o.requests for o in outcomes)
        print(
            f"| {strategy} | {summary} | {compactions} | {requests} | "
            + " | ".join(f"{share:.0%}" for share in shares)
            + f" | {total:.0%} |"
        )


def _probe_table(results: dict[tuple[str, str], list[Outcome]], probes: list[Probe]) -> None:
    """The held-out probe: per strategy and kind, the share present and the share present in
    every request, then how many values the patterns registered in all, and of the probe."""
    print(f"Held-out probe, {len(probes)} seeds: present / in every request after every compaction")
    print("| strategy | summary | " + " | ".join(KINDS) + " | present | every | found, probe |")
    print("|---" * (len(KINDS) + 5) + "|")
    for (strategy, summary), outcomes in results.items():
        runs = list(zip(outcomes, probes, strict=True))
        cells = []
        for kind in KINDS:
            present, every = _share([(o, p.facts[kind]) for o, p in runs])
            cells.append(f"{present:.0%} / {every:.0%}")
        present, every = _share([(o, [v for _, v in p.values]) for o, p in runs])
        # What the patterns registered in the whole run, and how much of it is the probe's:
        # the rest is what they found in the work orders, the files and the tools' replies.
        registered = sum(len(set(o.by_pattern)) for o in outcomes)
        probed = sum(len(set(o.by_pattern) & {v for _, v in p.values}) for o, p in runs)
        print(
            f"| {strategy} | {summary} | "
            + " | ".join(cells)
            + f" | {present:.1%} | {every:.1%} | {registered}, {probed} |"
        )


if __name__ == "__main__":
    main()
