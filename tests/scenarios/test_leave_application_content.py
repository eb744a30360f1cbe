"""leave_application's offline script: schema-valid and telling the scenario's story.

The script's tool calls are replayed in the order the pipeline runs them (Init round 1,
Execute round 1, Init round 2, Execute round 2) without touching the disk: a `Write` records
its content, and later `Read`s and handoffs are checked against what was written so far.
That the script is what its generator writes is checked beside the generator, under tests/tools.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from baton.agents.tools import ListInput, ReadInput, WriteInput
from baton.pipeline.artifacts import (
    EvaluationResult,
    FailureSummary,
    Layer1ProblemsReport,
    artifact_model,
    validate_artifact,
)
from baton.pipeline.packages import (
    ExecuteToInitContext,
    InitToExecuteContext,
    ScenarioCompletion,
    parse_package,
)

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "leave_application"
OUTPUTS = "scenarios/leave_application/execution_outputs"
TIMESTAMP = "2026-01-05T12:00:00+00:00"
HANDOFFS = {
    "handoff_to_execute": InitToExecuteContext,
    "return_to_init": ExecuteToInitContext,
    "complete_scenario": ScenarioCompletion,
}
FILE_TOOLS = {"Read": ReadInput, "Write": WriteInput, "List": ListInput}
SAMPLE_IDS = [f"BS_MT_{n:03d}" for n in range(1, 28)]
TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")

Block = dict[str, Any]


@pytest.fixture(scope="module")
def script() -> dict[str, Any]:
    """The committed offline script."""
    return json.loads((SCENARIO / "offline_script.json").read_text(encoding="utf-8"))


def _rounds(turns: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    rounds: list[list[dict[str, Any]]] = [[]]
    for turn in turns:
        rounds[-1].append(turn)
        if turn["stop_reason"] == "end_turn":
            rounds.append([])
    return [r for r in rounds if r]


def _pipeline_order(script: dict[str, Any]) -> Iterator[tuple[str, Block]]:
    """(actor, tool_use block) in the order the pipeline runs them: Init and Execute alternate."""
    init, execute = (_rounds(script["actors"][a]) for a in ("init", "execute"))
    for init_round, execute_round in zip(init, execute, strict=True):
        for actor, turns in (("init", init_round), ("execute", execute_round)):
            for turn in turns:
                for block in turn["content"]:
                    if block["type"] == "tool_use":
                        yield actor, block


def _writes(script: dict[str, Any]) -> dict[str, str]:
    """Every file the script writes, with its last content."""
    return {
        block["input"]["path"]: block["input"]["content"]
        for _, block in _pipeline_order(script)
        if block["name"] == "Write"
    }


def _iteration_files(script: dict[str, Any], iteration: int) -> dict[str, str]:
    """An iteration's files, keyed by their path inside the iteration directory."""
    prefix = f"{OUTPUTS}/iteration_{iteration}/"
    return {p.removeprefix(prefix): c for p, c in _writes(script).items() if p.startswith(prefix)}


def _evaluations(files: dict[str, str]) -> dict[str, EvaluationResult]:
    return {
        path.removeprefix("evaluation_results/").removesuffix("_eval.json"): (
            EvaluationResult.model_validate_json(content)
        )
        for path, content in files.items()
        if path.startswith("evaluation_results/")
    }


def _critical_share(report: Layer1ProblemsReport) -> float:
    critical = [p for p in report.layer1_problems if p.severity == "critical"]
    affected = {sample for p in critical for sample in p.affected_samples}
    return len(affected) / report.total_samples


def test_scenario_folder_holds_no_generator_code() -> None:
    """The scenario's folder holds what a user writes, not the code that generates its script."""
    assert [] == sorted(path.name for path in SCENARIO.rglob("*.py"))


def test_scenario_toml_points_at_the_script_and_sets_the_policy() -> None:
    """scenario.toml names the requirement, the script and the policy thresholds."""
    config = tomllib.loads((SCENARIO / "scenario.toml").read_text(encoding="utf-8"))
    assert "生成请假申请场景的评测样本" == config["requirement"]
    assert "offline_script.json" == config["offline_script"]
    expected_policy = {"success_threshold": 0.85, "layer1_critical_share": 0.30}
    assert expected_policy == {k: config["policy"][k] for k in expected_policy}
    budgets = {actor: config["actors"][actor] for actor in ("init", "execute")}
    below = {a: b["compact_threshold"] < b["context_window"] for a, b in budgets.items()}
    assert {"init": True, "execute": True} == below


def test_every_file_tool_input_validates(script: dict[str, Any]) -> None:
    """Every Read, Write and List input validates against the tool's own input model."""
    names = set()
    for _, block in _pipeline_order(script):
        names.add(block["name"])
        if block["name"] in FILE_TOOLS:
            FILE_TOOLS[block["name"]].model_validate(block["input"])
    assert {*FILE_TOOLS, *HANDOFFS} == names


def test_every_artifact_write_validates(script: dict[str, Any]) -> None:
    """Every Write to a known artifact place validates against baton's artifact model."""
    kinds: dict[str, int] = {}
    for path, content in _writes(script).items():
        model = artifact_model(path)
        if model is not None:
            validate_artifact(path, content, model)
            kinds[model.__name__] = kinds.get(model.__name__, 0) + 1
    expected = {
        "Sample": 54,
        "ExecutionTrace": 54,
        "EvaluationResult": 54,
        "AttributionAnalysis": 20,
        "FailureSummary": 2,
        "Layer1ProblemsReport": 2,
    }
    assert expected == kinds


def test_iteration_1_misses_the_bar_because_of_critical_layer1_problems(
    script: dict[str, Any],
) -> None:
    """Iteration 1: 27 samples, success < 85%, critical Layer-1 share > 30%, files agree."""
    files = _iteration_files(script, 1)
    evaluations = _evaluations(files)
    summary = FailureSummary.model_validate_json(files["failure_summary.json"])
    report = Layer1ProblemsReport.model_validate_json(files["layer1_problems_report.json"])
    passed = sum(e.passed for e in evaluations.values())
    assert SAMPLE_IDS == sorted(evaluations)
    assert passed == summary.passed_samples
    assert round(passed / 27, 4) == summary.success_rate
    assert (True, summary.success_rate) == (summary.success_rate < 0.85, summary.success_rate)
    share = _critical_share(report)
    assert (True, share) == (share > 0.30, share)
    failed = {sid for sid, e in evaluations.items() if not e.passed}
    attributed = {p.removeprefix("attribution_analysis/")[:9] for p in files if "attribution" in p}
    assert failed == attributed


def test_iteration_2_reaches_the_bar_with_the_same_samples(script: dict[str, Any]) -> None:
    """Iteration 2: the same 27 IDs, success ≥ 85%, no critical Layer-1 problem, files agree."""
    files = _iteration_files(script, 2)
    evaluations = _evaluations(files)
    summary = FailureSummary.model_validate_json(files["failure_summary.json"])
    report = Layer1ProblemsReport.model_validate_json(files["layer1_problems_report.json"])
    passed = sum(e.passed for e in evaluations.values())
    samples = sorted(p[8:-5] for p in files if p.startswith("samples/"))
    assert SAMPLE_IDS == samples
    assert SAMPLE_IDS == sorted(evaluations)
    assert passed == summary.passed_samples
    assert (True, summary.success_rate) == (summary.success_rate >= 0.85, summary.success_rate)
    assert 0.0 == _critical_share(report)


def test_handoffs_validate_and_reference_only_written_paths(script: dict[str, Any]) -> None:
    """Each handoff input parses as its package and points only at paths written before it."""
    written: set[str] = set()
    sent: list[str] = []
    for _, block in _pipeline_order(script):
        if block["name"] == "Write":
            written.add(block["input"]["path"])
        if block["name"] not in HANDOFFS:
            continue
        package = parse_package({**block["input"], "timestamp": TIMESTAMP})
        assert HANDOFFS[block["name"]].__name__ == type(package).__name__
        for path in package.referenced_paths():
            is_dir = any(PurePosixPath(w).is_relative_to(path) for w in written)
            assert (True, path) == (path in written or is_dir, path)
        sent.append(package.handoff_type)
    expected = ["init_to_execute", "execute_to_init", "init_to_execute", "scenario_complete"]
    assert expected == sent


def test_every_read_targets_a_file_written_before_it(script: dict[str, Any]) -> None:
    """No Read asks for a file the script has not written by then."""
    written: set[str] = set()
    unread = []
    for _, block in _pipeline_order(script):
        if block["name"] == "Write":
            written.add(block["input"]["path"])
        elif block["name"] == "Read" and block["input"]["path"] not in written:
            unread.append(block["input"]["path"])
    assert [] == unread


def test_both_actors_read_files_longer_than_5000_characters(script: dict[str, Any]) -> None:
    """Init and Execute each read a file over 5,000 characters (to exercise truncation)."""
    content: dict[str, str] = {}
    long_reads: dict[str, int] = {"init": 0, "execute": 0}
    for actor, block in _pipeline_order(script):
        if block["name"] == "Write":
            content[block["input"]["path"]] = block["input"]["content"]
        elif block["name"] == "Read" and len(content[block["input"]["path"]]) > 5000:
            long_reads[actor] += 1
    assert (True, True) == (long_reads["init"] > 0, long_reads["execute"] > 0)


def test_tool_use_ids_are_unique_and_well_formed(script: dict[str, Any]) -> None:
    """Tool-use ids are unique across the whole script and match the API's id pattern."""
    ids = [block["id"] for _, block in _pipeline_order(script)]
    assert sorted(set(ids)) == sorted(ids)
    assert [] == [i for i in ids if not TOOL_USE_ID.match(i)]


def test_stop_reasons_match_the_content(script: dict[str, Any]) -> None:
    """tool_use turns call tools, end_turn turns only talk; each actor has two rounds."""
    assert "baton-offline-script/1" == script["format"]
    for actor, turns in script["actors"].items():
        for turn in turns:
            kinds = {block["type"] for block in turn["content"]}
            texts = [b["text"] for b in turn["content"] if b["type"] == "text"]
            expected = {"text", "tool_use"} if turn["stop_reason"] == "tool_use" else {"text"}
            assert (actor, expected) == (actor, kinds)
            assert [] == [t for t in texts if not t.strip()]
        assert "end_turn" == turns[-1]["stop_reason"]
        assert 2 == len(_rounds(turns))
