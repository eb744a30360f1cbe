"""Handoff tools: the schema is the package's, bad input is corrected, paths must exist."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from baton.agents.tools import Sandbox, Toolbox, ToolOutcome
from baton.context.payload import ToolUseBlock
from baton.pipeline.handoff_tools import complete_scenario, handoff_to_execute, return_to_init
from baton.pipeline.packages import (
    ContextPackage,
    ExecuteToInitContext,
    InitToExecuteContext,
    ScenarioCompletion,
)
from baton.storage import LocalStorage, Storage, open_storage

SCENARIO = "scenarios/leave_application"
ITERATION = f"{SCENARIO}/execution_outputs/iteration_12"
DESIGN = {
    "unified_scenario_design_path": f"{SCENARIO}/unified_scenario_design.yaml",
    "business_rules_path": f"{SCENARIO}/BusinessRules.md",
    "format_specifications_path": f"{SCENARIO}/format_specifications.json",
}


class Recorder:
    """Stands in for the Scheduler's mailbox and the key-fact ledger."""

    def __init__(self) -> None:
        self.delivered: list[ContextPackage] = []
        self.registered: list[list[str]] = []

    async def deliver(self, package: ContextPackage) -> None:
        self.delivered.append(package)

    def register(self, paths: list[str]) -> None:
        self.registered.append(paths)


def fixed_clock() -> datetime:
    return datetime(2026, 1, 4, 10, 30, tzinfo=UTC)


def touch(root: Path, *paths: str) -> None:
    for path in paths:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("{}", encoding="utf-8")


def call(name: str, args: dict[str, Any], id_: str = "t1") -> ToolUseBlock:
    return {"type": "tool_use", "id": id_, "name": name, "input": args}


def toolbox(root: Path, recorder: Recorder, storage: Storage | None = None) -> Toolbox:
    sandbox = Sandbox(root)
    wiring: dict[str, Any] = {
        "deliver": recorder.deliver,
        "register_paths": recorder.register,
        "clock": fixed_clock,
    }
    if storage is not None:
        wiring["storage"] = storage
    return Toolbox(
        [
            handoff_to_execute(sandbox, **wiring),
            return_to_init(sandbox, **wiring),
            complete_scenario(sandbox, **wiring),
        ]
    )


async def test_an_invalid_handoff_is_named_then_corrected_and_delivered(tmp_path: Path) -> None:
    """A first call missing design_artifacts fails naming it; the fixed call is delivered."""
    touch(tmp_path, *DESIGN.values())
    recorder = Recorder()
    box = toolbox(tmp_path, recorder)
    first = await box.run(call("handoff_to_execute", {"user_requirement": ["not", "a", "str"]}))
    assert first.is_error
    assert "- user_requirement: Input should be a valid string" in first.content
    assert "- design_artifacts: Field required" in first.content
    assert [] == recorder.delivered

    second = await box.run(
        call(
            "handoff_to_execute",
            {"user_requirement": "生成请假申请场景的评测样本", "design_artifacts": DESIGN},
            id_="t2",
        )
    )
    assert not second.is_error
    assert "init_to_execute package was delivered" in second.content
    [package] = recorder.delivered
    assert type(package) is InitToExecuteContext
    assert "2026-01-04T10:30:00+00:00" == package.timestamp
    assert ("2.0", DESIGN) == (package.version, package.design_artifacts)
    assert [list(DESIGN.values())] == recorder.registered


async def test_a_missing_referenced_path_is_refused_and_nothing_is_sent(tmp_path: Path) -> None:
    """Paths that do not exist are listed in the error; deliver and register are not called."""
    touch(tmp_path, DESIGN["business_rules_path"])
    recorder = Recorder()
    outcome = await toolbox(tmp_path, recorder).run(
        call("handoff_to_execute", {"user_requirement": "r", "design_artifacts": DESIGN})
    )
    assert outcome.is_error
    assert f"- {DESIGN['unified_scenario_design_path']}: does not exist" in outcome.content
    assert f"- {DESIGN['format_specifications_path']}: does not exist" in outcome.content
    assert DESIGN["business_rules_path"] not in outcome.content
    assert ([], []) == (recorder.delivered, recorder.registered)


async def test_a_path_leaving_the_workspace_is_refused_with_its_reason(tmp_path: Path) -> None:
    """A design path with '..' is named with the sandbox's reason."""
    recorder = Recorder()
    outcome = await toolbox(tmp_path, recorder).run(
        call(
            "handoff_to_execute",
            {"user_requirement": "r", "design_artifacts": {"rules": "../etc/passwd"}},
        )
    )
    assert outcome.is_error
    assert "- ../etc/passwd: '..' is not allowed" in outcome.content
    assert [] == recorder.delivered


async def test_return_to_init_checks_index_paths_under_the_output_directory(
    tmp_path: Path,
) -> None:
    """Index and report paths resolve under execution_output_dir; all exist, so it is sent."""
    index_entry = {
        "sample_id": "BS_MT_001",
        "sample_path": "samples/BS_MT_001.json",
        "trace_path": "execution_traces/BS_MT_001_trace.json",
        "evaluation_path": "evaluation_results/BS_MT_001_eval.json",
        "attribution_path": "attribution_analysis/BS_MT_001_attribution.json",
        "failure_type": "Layer1_BusinessRule",
        "priority": "high",
    }
    files = [f"{ITERATION}/{index_entry[k]}" for k in index_entry if k.endswith("_path")]
    touch(tmp_path, *files, f"{ITERATION}/layer1_problems_report.json")
    recorder = Recorder()
    outcome = await toolbox(tmp_path, recorder).run(
        call(
            "return_to_init",
            {
                "execution_output_dir": ITERATION,
                "trigger_reason": "Critical问题占比35%",
                "iteration_summary": {"total_samples": 27, "failed_samples": 18},
                "failure_samples_index": [index_entry],
                "layer1_problems_report_path": "layer1_problems_report.json",
                "modification_suggestions_summary": ["明确扣减时机"],
            },
        )
    )
    assert not outcome.is_error, outcome.content
    assert isinstance(recorder.delivered[0], ExecuteToInitContext)
    assert [ITERATION, *files, f"{ITERATION}/layer1_problems_report.json"] == recorder.registered[0]


async def test_workspace_prefixed_index_paths_get_a_hint(tmp_path: Path) -> None:
    """An index path given from the workspace root is missing, and the error explains why."""
    touch(tmp_path, f"{ITERATION}/layer1_problems_report.json")
    outcome = await toolbox(tmp_path, Recorder()).run(
        call(
            "complete_scenario",
            {
                "execution_output_dir": ITERATION,
                "success_rate": 0.9,
                "iteration_summary": {},
                "report_paths": {"failure_summary": f"{ITERATION}/failure_summary.json"},
            },
        )
    )
    assert outcome.is_error
    assert "every other path in the package is relative to execution_output_dir" in outcome.content


async def test_complete_scenario_delivers_a_completion(tmp_path: Path) -> None:
    """A valid completion with existing reports is delivered as a ScenarioCompletion."""
    touch(tmp_path, f"{ITERATION}/failure_summary.json")
    recorder = Recorder()
    outcome = await toolbox(tmp_path, recorder).run(
        call(
            "complete_scenario",
            {
                "execution_output_dir": ITERATION,
                "success_rate": 0.89,
                "iteration_summary": {"total_samples": 27},
                "report_paths": {"failure_summary": "failure_summary.json"},
            },
        )
    )
    assert not outcome.is_error, outcome.content
    [package] = recorder.delivered
    assert isinstance(package, ScenarioCompletion)
    assert 0.89 == package.success_rate


async def test_a_package_of_another_major_version_is_refused(tmp_path: Path) -> None:
    """version 3.0 in the call is an is_error naming both versions."""
    touch(tmp_path, *DESIGN.values())
    recorder = Recorder()
    outcome = await toolbox(tmp_path, recorder).run(
        call(
            "handoff_to_execute",
            {"version": "3.0", "user_requirement": "r", "design_artifacts": DESIGN},
        )
    )
    assert outcome.is_error
    assert "'3.0'" in outcome.content
    assert "'2.0'" in outcome.content
    assert [] == recorder.delivered


async def test_an_async_ledger_is_awaited(tmp_path: Path) -> None:
    """register_paths may be a coroutine function; its work is done before the call returns."""
    touch(tmp_path, *DESIGN.values())
    recorder = Recorder()
    seen: list[list[str]] = []

    async def register(paths: list[str]) -> None:
        seen.append(paths)

    tool = handoff_to_execute(
        Sandbox(tmp_path), deliver=recorder.deliver, register_paths=register, clock=fixed_clock
    )
    outcome = await Toolbox([tool]).run(
        call("handoff_to_execute", {"user_requirement": "r", "design_artifacts": DESIGN})
    )
    assert not outcome.is_error
    assert [list(DESIGN.values())] == seen


@pytest.mark.parametrize(
    ("name", "package"),
    [
        ("handoff_to_execute", InitToExecuteContext),
        ("return_to_init", ExecuteToInitContext),
        ("complete_scenario", ScenarioCompletion),
    ],
)
def test_the_input_schema_is_the_packages_with_the_timestamp_optional(
    tmp_path: Path, name: str, package: type[ContextPackage]
) -> None:
    """Each tool's schema equals the package's JSON schema except that timestamp is optional."""
    [spec] = [s for s in toolbox(tmp_path, Recorder()).specs() if s["name"] == name]
    schema = spec["input_schema"]
    expected = package.model_json_schema()
    assert "timestamp" in expected["required"]
    assert [r for r in expected["required"] if r != "timestamp"] == schema["required"]
    assert expected["properties"].keys() == schema["properties"].keys()
    for field in expected["properties"]:
        if field != "timestamp":
            assert expected["properties"][field] == schema["properties"][field]
    assert package.__name__ == schema["title"]


async def test_referenced_paths_through_links_are_judged_where_they_lead(tmp_path: Path) -> None:
    """A design path through a link that stays inside is accepted; one through a link that
    leads outside, and one under .baton/, are refused with the sandbox's reason."""
    touch(tmp_path, *DESIGN.values(), ".baton/state.json")
    (tmp_path.parent / "elsewhere").mkdir(exist_ok=True)
    os.symlink(tmp_path / SCENARIO, tmp_path / "current")
    os.symlink(tmp_path.parent / "elsewhere", tmp_path / "away")
    design = {"rules": "current/BusinessRules.md", "away": "away/x.md", "own": ".baton/state.json"}
    recorder = Recorder()
    outcome = await toolbox(tmp_path, recorder).run(
        call("handoff_to_execute", {"user_requirement": "r", "design_artifacts": design})
    )
    assert [
        "- away/x.md: a symbolic link on this path leads outside the workspace",
        "- .baton/state.json: '.baton/' is reserved for the runtime; tools cannot use it",
    ] == [line for line in outcome.content.splitlines() if line.startswith("- ")]
    assert [] == recorder.delivered


COMPLETION = {
    "execution_output_dir": ITERATION,
    "success_rate": 0.89,
    "iteration_summary": {"total_samples": 27},
    "report_paths": {"failure_summary": "failure_summary.json"},
}


async def test_in_a_store_the_paths_must_be_objects_there(s3_url: str, tmp_path: Path) -> None:
    """With a remote store the paths are looked up in the bucket, not the workspace: files
    only the workspace holds are refused as missing, and once stored the package is sent."""
    store = open_storage(s3_url, tmp_path)
    touch(tmp_path, *DESIGN.values())
    await store.write(DESIGN["business_rules_path"], b"{}")
    recorder = Recorder()
    box = toolbox(tmp_path, recorder, store)
    args = {"user_requirement": "r", "design_artifacts": DESIGN}
    refused = await box.run(call("handoff_to_execute", args))
    assert (True, [], []) == (refused.is_error, recorder.delivered, recorder.registered)
    assert [
        f"- {DESIGN['unified_scenario_design_path']}: does not exist",
        f"- {DESIGN['format_specifications_path']}: does not exist",
    ] == [line for line in refused.content.splitlines() if line.startswith("- ")]
    for path in DESIGN.values():
        await store.write(path, b"{}")
    sent = await box.run(call("handoff_to_execute", args, id_="t2"))
    assert (False, [list(DESIGN.values())]) == (sent.is_error, recorder.registered)


async def test_in_a_store_a_folder_exists_when_an_object_is_under_it(
    s3_url: str, tmp_path: Path
) -> None:
    """execution_output_dir names a folder: in a bucket it exists through the objects below
    it, so a completion whose report is stored is delivered."""
    store = open_storage(s3_url, tmp_path)
    await store.write(f"{ITERATION}/failure_summary.json", b"{}")
    recorder = Recorder()
    outcome = await toolbox(tmp_path, recorder, store).run(call("complete_scenario", COMPLETION))
    assert (False, [[ITERATION, f"{ITERATION}/failure_summary.json"]]) == (
        outcome.is_error,
        recorder.registered,
    )


@pytest.mark.parametrize(
    "path", ["../etc/passwd", "/etc/passwd", ".baton/journal/init.jsonl", "scenarios/none.md"]
)
async def test_a_store_refuses_the_paths_the_workspace_refuses(
    s3_url: str, tmp_path: Path, path: str
) -> None:
    """'..', absolute outside, .baton/ and a missing path: the same lines in the bucket as
    in the workspace folder (its `LocalStorage`), and nothing is sent; a path only the bucket
    holds is sent (the bucket, not the folder, was asked)."""
    remote = open_storage(s3_url, tmp_path)
    await remote.write(DESIGN["business_rules_path"], b"{}")
    outcomes: list[tuple[ToolOutcome, int]] = []
    for store in (LocalStorage(tmp_path), remote, remote):
        recorder = Recorder()
        rules = path if len(outcomes) < 2 else DESIGN["business_rules_path"]
        args = {"user_requirement": "r", "design_artifacts": {"rules": rules}}
        outcome = await toolbox(tmp_path, recorder, store).run(call("handoff_to_execute", args))
        outcomes.append((outcome, len(recorder.delivered)))
    local, stored, control = outcomes
    assert ((True, 0), local, (False, 1)) == (
        (local[0].is_error, local[1]),
        stored,
        (control[0].is_error, control[1]),
    )
