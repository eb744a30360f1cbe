"""How many key facts survive forgetful compactions, per strategy and kind of fact.

Run: .venv/bin/python bench/ledger_survival.py [--baseline] [--reads N]

Init (offline scripted model, real agent loop, journal and tools) gets a work order with an
execute_to_init package and a ticket id in its task, reads a file naming a sample id, writes
its design and hands off; a second work order then reads a large file N times, so the
conversation compacts about once per read, every summary forgetting everything (a valid
summary with empty sections, or text with no JSON for the fallback). Every turn request
after the first compaction is searched for each fact verbatim; the table gives the share
found per kind of fact (docs/context.md, "Key-fact ledger").

`--baseline` switches off what the ledger registers and shows beyond the handoff tool's
and Write's paths (work-order ids and package facts, pattern ids, sliding_window's ledger
turn), which is how baton behaved before they existed: the figures to compare against.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import anyio

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


class _Scheduler(Actor):
    """Takes the handoff and the round end so the rounds can end."""

    @handler
    async def delivered(self, message: HandoffDelivered) -> None:
        """Nothing to do with it here."""

    @handler
    async def ended(self, message: RoundEnded) -> None:
        """Nor with this."""


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


def _model(reads: int, summary: str) -> ScriptedModel:
    def tool(name: str, **args: Any) -> dict[str, Any]:
        return {"tool_use": {"name": name, "input": args}}

    forgetful: dict[str, Any] | str = (
        InitSummary.empty() if summary == "forgetful" else "I forgot everything."
    )
    turns: list[Any] = [
        tool("Read", path="scenarios/leave/notes.txt"),
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


async def _run(strategy: str, summary: str, reads: int) -> tuple[int, int, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        leave = workspace / "scenarios" / "leave"
        leave.mkdir(parents=True)
        (leave / "notes.txt").write_text("BS_MT_042 failed the balance checker\n")
        (leave / "big.txt").write_text("\n".join(f"row {n}: {'y' * 90}" for n in range(300)))
        model = _model(reads, summary)
        config = AgentConfig.model_validate(
            {
                "model": "claude-opus-4-5",
                "context_window": 40_000,
                "compact_threshold": 6_000,
                "keep_recent_steps": 2,
                "max_output_tokens": 1_000,
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
                for n, task in ((1, "review the failures of TICKET-4711"), (2, "read big.txt")):
                    order = Dispatch(
                        scenario="leave",
                        agent_context=AgentContext(task_summary=task),
                        package=_package() if n == 1 else None,
                        dispatch_id=f"leave#{n}",
                    )
                    await rt.ask("init", order)
    compactions = [i for i, line in enumerate(lines) if line["event"] == "context.compacted"]
    later = {
        line["turn"]
        for line in lines[compactions[0] :]
        if line["event"] == "model.call" and line["purpose"] == "turn"
    }
    shown = [
        json.dumps([call.payload.get("system"), call.payload["messages"]], ensure_ascii=False)
        for call in model.calls
        if call.context.purpose == "turn" and call.context.turn in later
    ]
    kept = {
        kind: sum(fact in text for text in shown for fact in facts) / (len(shown) * len(facts))
        for kind, facts in FACTS.items()
    }
    return len(compactions), len(shown), kept


def _baseline() -> None:
    """Register and show only what the handoff tool and Write registered before."""
    roles_module.dispatch_facts = lambda message: []  # type: ignore[assignment]
    reports_module.SchedulerReports.facts = lambda self, package: []  # type: ignore[method-assign]
    original = agent_loop_module.FactPatterns
    agent_loop_module.FactPatterns = lambda patterns: original([])  # type: ignore[assignment,misc]
    sliding_window_module.ledger_message = lambda ledger, **_: None  # type: ignore[assignment]


def main() -> None:
    """Print one row per strategy and summary kind."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", action="store_true", help="the ledger before this change")
    parser.add_argument("--reads", type=int, default=12, help="large reads in the second round")
    args = parser.parse_args()
    # The agents' log lines would bury the table; the token log is captured either way.
    configure_logging(stream=open(os.devnull, "w"))  # noqa: SIM115 - open for the whole run
    if args.baseline:
        _baseline()
    kinds = list(FACTS)
    print("| strategy | summary | compactions | requests | " + " | ".join(kinds) + " | all |")
    print("|---" * (len(kinds) + 5) + "|")
    for strategy in ("summarize", "sliding_window", "extract_state"):
        for summary in ("forgetful", "not_json"):
            if strategy != "summarize" and summary == "not_json":
                continue  # no summary call: the summary kind changes nothing
            compactions, requests, kept = anyio.run(_run, strategy, summary, args.reads)
            total = sum(kept[k] * len(FACTS[k]) for k in kinds) / sum(map(len, FACTS.values()))
            cells = " | ".join(f"{kept[k]:.0%}" for k in kinds)
            print(
                f"| {strategy} | {summary} | {compactions} | {requests} | {cells} | {total:.0%} |"
            )


if __name__ == "__main__":
    main()
