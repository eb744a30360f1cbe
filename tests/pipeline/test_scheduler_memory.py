"""The Scheduler's memory: findings stored per iteration, recalled into work orders within the
budget and logged, `[memory]` validated, and AgentContext compatible with older contexts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from baton.agents.agent_setup import ToolHooks
from baton.errors import ConfigError
from baton.memory import MemoryStore, open_memory
from baton.pipeline.agent_context import AgentContext
from baton.pipeline.artifacts import FailureSummary
from baton.pipeline.config import BatonConfig, parse_config
from baton.pipeline.memory_config import MemoryConfig
from baton.pipeline.packages import ExecuteToInitContext, ScenarioCompletion
from baton.pipeline.records import MemoryRecalled
from baton.pipeline.roles import EXECUTE, INIT, role_toolbox
from baton.pipeline.scenario import ScenarioConfig, ScenarioRecord
from baton.pipeline.scenario_state import SCHEDULER
from baton.pipeline.scheduler_memory import SchedulerMemory, iteration_finding
from baton.pipeline.scheduling_policy import Decision
from baton.runtime.settings import load_settings

NAME = "leave"


class Sink:
    """Collects token-log events, checked against their schema."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def emit(self, event: str, **fields: Any) -> None:
        record = {"ts": "2026-11-23T00:00:00Z", "event": event, "actor": "scheduler", **fields}
        MemoryRecalled.model_validate(record)
        self.events.append(record)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[MemoryStore]:
    async with await open_memory(tmp_path) as opened:
        yield opened


def record(run: int = 1, iteration: int = 1) -> ScenarioRecord:
    config = ScenarioConfig(name=NAME, requirement="design a leave application scenario")
    return ScenarioRecord(
        scenario=NAME, requirement=config.requirement, run=run, iteration=iteration, config=config
    )


def returned(iteration: int = 1) -> ExecuteToInitContext:
    return ExecuteToInitContext(
        timestamp="2026-11-23T00:00:00Z",
        execution_output_dir=f"scenarios/{NAME}/execution_outputs/iteration_{iteration}",
        trigger_reason="balance rules are ambiguous",
        iteration_summary={},
        failure_samples_index=[],
        layer1_problems_report_path="layer1_problems_report.json",
        modification_suggestions_summary=["define the balance update rule"],
    )


SUMMARY = FailureSummary(
    iteration=1,
    total_samples=10,
    passed_samples=7,
    failed_samples=3,
    success_rate=0.7,
    failures_by_cause={"Layer1_BusinessRule": ["S01", "S02", "S03"]},
)
RETURN = Decision("return_to_init", "success 70% is below 85%", 0.7, 0.2)
COMPLETE = Decision("complete", "success 90% meets 85%", 0.9, 0.0)


def test_a_finding_says_what_failed() -> None:
    """A failed iteration's finding names its causes, samples and Execute's suggestions."""
    text = iteration_finding(record(), returned(), RETURN, SUMMARY, None)
    assert "What failed: Layer1_BusinessRule: 3 samples (S01, S02, S03)." in text
    assert "Suggested changes: define the balance update rule" in text
    assert text.startswith("leave iteration 1 (run 1): return_to_init; success rate 70%.")


def test_a_finding_after_a_failed_iteration_says_what_fixed_it() -> None:
    """The iteration that meets the criteria names the changes the previous one asked for."""
    later = record(iteration=2)
    later.findings = {
        "execute": {
            "last_iteration": {
                "success_rate": 0.7,
                "modification_suggestions": ["define the balance update rule"],
            }
        }
    }
    completion = ScenarioCompletion(
        timestamp="2026-11-23T00:00:00Z",
        execution_output_dir=f"scenarios/{NAME}/execution_outputs/iteration_2",
        success_rate=0.9,
        iteration_summary={},
        report_paths={},
    )
    text = iteration_finding(later, completion, COMPLETE, None, None)
    assert (
        "What fixed it: up from 70% in the iteration before, after these changes: "
        "define the balance update rule"
    ) in text


async def test_a_finding_is_tagged_scenario_kind_and_iteration(store: MemoryStore) -> None:
    """The finding is filed under the scenario's base name, `kind:finding`, `iteration:<n>`."""
    memory = SchedulerMemory(store, MemoryConfig(), Sink())
    later = record(run=2)
    finding = iteration_finding(later, returned(), RETURN, SUMMARY, None)
    entry = await memory.record_finding(later, finding, RETURN)
    assert entry is not None
    assert ("scenario:leave", "kind:finding", "iteration:1") == entry.tags
    assert ("scheduler", "leave@2") == (entry.source.agent, entry.source.conversation)


async def test_a_finding_stored_again_for_the_same_run_and_iteration_is_stored_once(
    store: MemoryStore,
) -> None:
    """The handoff that led to a finding delivered again after a crash stores nothing new;
    the same iteration of the next run is a finding of its own."""
    memory = SchedulerMemory(store, MemoryConfig(), Sink())
    first, again, next_run = record(run=1), record(run=1), record(run=2)
    finding = iteration_finding(first, returned(), RETURN, SUMMARY, None)
    stored = await memory.record_finding(first, finding, RETURN)
    repeated = await memory.record_finding(again, finding, RETURN)
    other = await memory.record_finding(next_run, finding, RETURN)
    assert stored is not None
    assert repeated is not None
    assert other is not None
    assert stored.id == repeated.id != other.id
    assert 2 == len(await store.list(tags=("kind:finding",)))


async def test_recall_brings_the_scenarios_findings_and_logs_them(store: MemoryStore) -> None:
    """A later run recalls the scenario's findings, even when they share no words with the
    requirement, and logs `memory.recalled` with the count and tokens."""
    sink = Sink()
    memory = SchedulerMemory(store, MemoryConfig(), sink)
    finding = iteration_finding(record(), returned(), RETURN, SUMMARY, None)
    await memory.record_finding(record(), finding, RETURN)
    await store.remember("unrelated", tags=["scenario:other"])
    text = await memory.recall(record(run=2), "init")
    assert "Layer1_BusinessRule" in text
    assert "unrelated" not in text
    [event] = sink.events
    assert ("memory.recalled", NAME, "leave@2", 1) == (
        event["event"],
        event["scenario"],
        event["conversation"],
        event["count"],
    )
    assert 0 < event["tokens"] <= MemoryConfig().memory_budget_tokens


async def test_recall_stays_within_the_budget(store: MemoryStore) -> None:
    """Entries that would pass `memory_budget_tokens` are left out; a zero budget recalls
    nothing and logs nothing."""
    for index in range(5):
        await store.remember(f"finding {index} " + "word " * 150, tags=["scenario:leave"])
    sink = Sink()
    await SchedulerMemory(store, MemoryConfig(memory_budget_tokens=400), sink).recall(
        record(), "init"
    )
    assert 0 < sink.events[0]["count"] < 5
    assert sink.events[0]["tokens"] <= 400
    silent = Sink()
    none = await SchedulerMemory(store, MemoryConfig(memory_budget_tokens=0), silent).recall(
        record(), "init"
    )
    assert ("", []) == (none, silent.events)


def test_memory_section_defaults_and_checks() -> None:
    """`[memory]` defaults to enabled with a 2000-token budget and 5 entries; a bad or
    unknown key is a ConfigError naming it."""
    memory = parse_config({}).memory
    assert (True, 2000, 5, "sqlite") == (
        memory.enabled,
        memory.memory_budget_tokens,
        memory.recall_limit,
        memory.backend,
    )
    with pytest.raises(ConfigError, match="recall_limit"):
        parse_config({"memory": {"recall_limit": 0}})
    with pytest.raises(ConfigError, match="budget"):
        parse_config({"memory": {"budget": 10}})


def test_agent_context_renders_recalled_memory_and_loads_older_contexts() -> None:
    """The recalled entries get their own section; a context saved without the field loads."""
    old = AgentContext.model_validate({"task_summary": "do it"})
    assert "" == old.recalled_memory
    rendered = AgentContext(task_summary="do it", recalled_memory="[m-1] a finding").render()
    assert "## Recalled from long-term memory\n[m-1] a finding" in rendered


def test_the_kernel_carries_the_memory_section_to_the_pipeline(tmp_path: Path) -> None:
    """A `[memory]` table read by the kernel alone (`Runtime.open(workspace)`) reaches the
    pipeline's configuration checked."""
    (tmp_path / "baton.toml").write_text("[memory]\nrecall_limit = 3\n", encoding="utf-8")
    kernel = load_settings(tmp_path, environ={})
    assert 3 == BatonConfig.of(kernel).memory.recall_limit


async def test_init_and_execute_get_the_memory_tools_and_the_scheduler_none(
    tmp_path: Path, store: MemoryStore
) -> None:
    """With a store, Init's and Execute's toolboxes hold Remember, Recall and Forget; the
    Scheduler's, and any toolbox without a store, hold none of them."""
    config = parse_config({})
    hooks = ToolHooks(deliver=_nothing, register_paths=lambda _: None)

    def names(role: str, memory: MemoryStore | None) -> set[str]:
        build = role_toolbox(role, tmp_path, config.agent(role), memory=memory)
        return set(build(hooks).names) & {"Remember", "Recall", "Forget"}

    assert [{"Remember", "Recall", "Forget"}] * 2 + [set(), set()] == [
        names(INIT, store),
        names(EXECUTE, store),
        names(SCHEDULER, store),
        names(INIT, None),
    ]


async def _nothing(_: object) -> None:
    return None
