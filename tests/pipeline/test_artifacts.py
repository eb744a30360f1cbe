"""Artifacts: the protocol's example report validates, round trips hold, bad files fail,
writes are atomic."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from baton.agents._artifact_io import remove_write_leftovers
from baton.agents.errors import InvalidArtifactError, SandboxViolationError
from baton.errors import UsageError
from baton.pipeline.artifacts import (
    ITERATION_SUBDIRS,
    ArtifactStore,
    AttributionAnalysis,
    EvaluationResult,
    ExecutionTrace,
    FailureSummary,
    IterationLayout,
    Layer1ProblemsReport,
    Sample,
    artifact_model,
    write_atomic,
)
from baton.storage import open_storage

# The handoff protocol's layer1_problems_report.json example, verbatim (docs/handoffs.md,
# "failure_summary.json and layer1_problems_report.json").
SEED_REPORT = """
{
  "report_version": "1.0",
  "generated_at": "2026-01-04T15:30:00",
  "iteration": 12,
  "total_samples": 27,
  "failed_samples": 18,
  "failure_rate": 0.67,

  "layer1_problems": [
    {
      "problem_id": "L1P_001",
      "problem_type": "BusinessRule_Unclear",
      "severity": "critical",
      "title": "余额扣减时机未明确",
      "description": "BusinessRules.md 未明确说明余额必须在创建申请时同步扣减",
      "affected_samples": ["BS_MT_001", "BS_MT_003", "BS_MT_007", "..."],
      "affected_count": 9,
      "evidence_summary": "9个case中Agent都创建了申请但未扣减余额",
      "typical_case_id": "BS_MT_001",
      "suggested_fix": {
        "target": "BusinessRules.md",
        "section": "## 请假申请流程",
        "modification": "在步骤2后添加：必须立即调用 update_employee_leave_balance 扣减余额",
        "rationale": "明确业务规则，避免Agent遗漏关键操作"
      }
    },
    {
      "problem_id": "L1P_002",
      "problem_type": "Checker_Design",
      "severity": "high",
      "title": "余额checker容忍度过严",
      "description": "leave_balance_deducted要求精确相等，但存在浮点误差",
      "affected_samples": ["BS_MT_010", "BS_MT_015", "BS_MT_021"],
      "affected_count": 3,
      "evidence_summary": "预期7.0天但实际6.999999天",
      "typical_case_id": "BS_MT_010",
      "suggested_fix": {
        "target": "unified_scenario_design.yaml",
        "section": "checkers.leave_balance_deducted",
        "modification": "将validation_logic改为容忍0.01天误差",
        "rationale": "处理浮点数精度问题"
      }
    }
  ],

  "modification_priority": [
    {
      "priority": 1,
      "problem_id": "L1P_001",
      "impact": "解决9个失败case",
      "estimated_improvement": "+33%"
    },
    {
      "priority": 2,
      "problem_id": "L1P_002",
      "impact": "解决3个失败case",
      "estimated_improvement": "+11%"
    }
  ]
}
"""

LAYOUT = IterationLayout("leave_application", 12)
SAMPLE_ID = "BS_MT_001"

PER_SAMPLE: list[tuple[str, BaseModel]] = [
    (
        str(LAYOUT.sample(SAMPLE_ID)),
        Sample(
            sample_id=SAMPLE_ID,
            category="multi_turn",
            initial_state={"employees": {"E1": {"annual_leave": 10.0}}},
            user_turns=["我想请三天年假"],
            checkers=["leave_balance_deducted"],
        ),
    ),
    (
        str(LAYOUT.trace(SAMPLE_ID)),
        ExecutionTrace.model_validate(
            {
                "sample_id": SAMPLE_ID,
                "conversation_history": [
                    {"role": "user", "content": "我想请三天年假"},
                    {"role": "assistant", "content": "已为您创建申请"},
                ],
                "tool_calls": [
                    {
                        "name": "create_leave_application",
                        "arguments": {"days": 3},
                        "result": {"id": "A1"},
                        "turn": 1,
                    }
                ],
                "states": [
                    {"at": "initial", "state": {"balance": 10.0}},
                    {"at": "final", "state": {"balance": 10.0}},
                ],
            }
        ),
    ),
    (
        str(LAYOUT.evaluation(SAMPLE_ID)),
        EvaluationResult.model_validate(
            {
                "sample_id": SAMPLE_ID,
                "passed": False,
                "checker_results": [
                    {
                        "checker_id": "leave_balance_deducted",
                        "passed": False,
                        "expected": 7.0,
                        "actual": 10.0,
                        "evidence": "balance unchanged",
                    }
                ],
                "llm_judgement": {"verdict": "fail", "score": 0.3, "rationale": "未扣减余额"},
            }
        ),
    ),
    (
        str(LAYOUT.attribution(SAMPLE_ID)),
        AttributionAnalysis(
            sample_id=SAMPLE_ID,
            failure_type="Layer1_BusinessRule",
            layer=1,
            root_cause="BusinessRules.md 未说明扣减时机",
            related_problem_id="L1P_001",
        ),
    ),
]


def test_the_seed_report_example_validates_field_for_field() -> None:
    """The protocol's example report parses, and dumping it gives back exactly its JSON."""
    report = Layer1ProblemsReport.model_validate_json(SEED_REPORT)
    assert json.loads(SEED_REPORT) == report.model_dump()
    assert "critical" == report.layer1_problems[0].severity


async def test_a_report_round_trips_through_the_store(tmp_path: Path) -> None:
    """A report written to its layout path reads back equal, as the JSON of the model."""
    store = ArtifactStore(tmp_path)
    report = Layer1ProblemsReport.model_validate_json(SEED_REPORT)
    written = await store.write(LAYOUT.layer1_problems_report, report)
    assert tmp_path / LAYOUT.layer1_problems_report == written
    assert report == await store.read_report(LAYOUT.layer1_problems_report)
    assert report.model_dump() == json.loads(written.read_text(encoding="utf-8"))
    assert "余额扣减时机未明确" in written.read_text(encoding="utf-8")  # CJK kept readable


@pytest.mark.parametrize(("path", "artifact"), PER_SAMPLE, ids=lambda v: type(v).__name__)
async def test_per_sample_artifacts_round_trip(
    tmp_path: Path, path: str, artifact: BaseModel
) -> None:
    """Each per-sample file written at its layout path reads back equal to what was written."""
    store = ArtifactStore(tmp_path)
    await store.write(path, artifact)
    assert type(artifact) is artifact_model(path)
    assert artifact == await store.read(path, type(artifact))


async def test_a_failure_summary_round_trips_and_its_counts_must_agree(tmp_path: Path) -> None:
    """A consistent summary round trips; passed + failed != total is refused on write."""
    store = ArtifactStore(tmp_path)
    summary = FailureSummary(
        iteration=12,
        total_samples=27,
        passed_samples=9,
        failed_samples=18,
        success_rate=0.33,
        failures_by_cause={"Layer1_BusinessRule": ["BS_MT_001", "BS_MT_003"]},
    )
    await store.write(LAYOUT.failure_summary, summary)
    assert summary == await store.read_failure_summary(LAYOUT.failure_summary)
    broken = summary.model_copy(update={"passed_samples": 10})
    with pytest.raises(InvalidArtifactError, match="must equal total_samples"):
        await store.write(LAYOUT.failure_summary, broken)
    assert summary == await store.read_failure_summary(LAYOUT.failure_summary)


async def test_invalid_content_is_refused_on_read_naming_file_and_field(tmp_path: Path) -> None:
    """A report with a bad severity and a missing field raises naming the file and both fields."""
    data: dict[str, Any] = json.loads(SEED_REPORT)
    data["layer1_problems"][1]["severity"] = "urgent"
    del data["iteration"]
    path = tmp_path / LAYOUT.layer1_problems_report
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InvalidArtifactError) as caught:
        await ArtifactStore(tmp_path).read_report(LAYOUT.layer1_problems_report)
    message = str(caught.value)
    assert str(LAYOUT.layer1_problems_report) in message
    assert [
        "iteration: Field required",
        "layer1_problems.1.severity: Input should be 'critical', 'high', 'medium' or 'low' "
        '(got "urgent")',
    ] == caught.value.problems


async def test_a_file_that_is_not_json_or_absent_is_refused(tmp_path: Path) -> None:
    """Broken JSON and a missing file both raise InvalidArtifactError naming the file."""
    store = ArtifactStore(tmp_path)
    path = tmp_path / LAYOUT.failure_summary
    path.parent.mkdir(parents=True)
    path.write_text('{"iteration": 1,', encoding="utf-8")
    with pytest.raises(InvalidArtifactError, match="Invalid JSON"):
        await store.read_failure_summary(LAYOUT.failure_summary)
    with pytest.raises(InvalidArtifactError, match="the file does not exist"):
        await store.read_report(LAYOUT.layer1_problems_report)


async def test_a_sample_file_must_carry_its_own_id(tmp_path: Path) -> None:
    """Writing sample BS_MT_002 to BS_MT_001's file is refused before anything is written."""
    store = ArtifactStore(tmp_path)
    with pytest.raises(InvalidArtifactError, match="does not match the file name"):
        await store.write(LAYOUT.sample(SAMPLE_ID), Sample(sample_id="BS_MT_002"))
    assert not (tmp_path / LAYOUT.sample(SAMPLE_ID)).exists()


async def test_a_layout_path_only_takes_its_own_schema(tmp_path: Path) -> None:
    """A FailureSummary cannot be written where the Layer-1 report belongs."""
    summary = FailureSummary(
        iteration=1, total_samples=1, passed_samples=1, failed_samples=0, success_rate=1.0
    )
    with pytest.raises(InvalidArtifactError, match="holds a Layer1ProblemsReport"):
        await ArtifactStore(tmp_path).write(LAYOUT.layer1_problems_report, summary)


async def test_paths_outside_the_workspace_are_refused(tmp_path: Path) -> None:
    """The store will not read or write outside its workspace."""
    store = ArtifactStore(tmp_path / "ws")
    with pytest.raises(SandboxViolationError):
        await store.read_report("../elsewhere/layer1_problems_report.json")


async def test_iterations_are_laid_out_and_counted(tmp_path: Path) -> None:
    """create_iteration makes the four directories; next_iteration is one past the last."""
    store = ArtifactStore(tmp_path)
    assert 1 == await store.next_iteration("leave_application")
    layout = await store.create_iteration("leave_application", 1)
    await store.create_iteration("leave_application", 2)
    base = tmp_path / "scenarios/leave_application/execution_outputs/iteration_1"
    assert sorted(ITERATION_SUBDIRS) == sorted(p.name for p in base.iterdir())
    assert [1, 2] == await store.iterations("leave_application")
    assert 3 == await store.next_iteration("leave_application")
    assert "samples/BS_MT_001.json" == layout.relative(layout.sample("BS_MT_001"))


def test_scenario_names_cannot_climb_out() -> None:
    """A scenario name with a path separator or '..' is refused (the one rule for names)."""
    store = ArtifactStore(Path("ws"))
    for name in ("../x", "a/b", ".."):
        with pytest.raises(UsageError, match="is not allowed"):
            store.iteration(name, 1)


async def test_atomic_writes_leave_no_temp_files(tmp_path: Path) -> None:
    """Writing twice leaves only the final file, holding the second content."""
    target = tmp_path / "deep/dir/file.json"
    await write_atomic(target, b'{"n": 1}')
    await write_atomic(target, b'{"n": 2}')
    assert b'{"n": 2}' == target.read_bytes()
    assert ["file.json"] == os.listdir(target.parent)


def test_old_write_leftovers_are_removed_and_fresh_ones_and_other_files_kept(
    tmp_path: Path,
) -> None:
    """Temp files of writes older than the age limit go; one young enough to be a write in
    progress (another process's) stays, and so does every other file."""
    folder = tmp_path / "leave/execution_outputs"
    folder.mkdir(parents=True)
    old, young = folder / ".a.json.0415eb8a5a2f.tmp", folder / ".b.json.9f00aa11bb22.tmp"
    kept = [folder / "a.json", folder / ".notes.tmp", young]
    for path in [old, *kept]:
        path.write_text("x", encoding="utf-8")
    hour_ago = time.time() - 3600
    os.utime(old, (hour_ago, hour_ago))
    assert 1 == remove_write_leftovers(tmp_path)
    assert sorted(p.name for p in kept) == sorted(os.listdir(folder))


async def test_a_failed_write_keeps_the_old_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the write fails before the rename, the old content stays and no temp file is left."""
    target = tmp_path / "file.json"
    await write_atomic(target, b"old")

    def broken_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="Input/output error"):
        await write_atomic(target, b"new content that never lands")
    assert b"old" == target.read_bytes()
    assert ["file.json"] == os.listdir(tmp_path)


async def test_a_report_that_is_a_pipe_or_a_second_link_is_refused_at_once(
    tmp_path: Path,
) -> None:
    """A package may name a FIFO (whose open would block the Scheduler) or a hard link to a
    file elsewhere: reading it is an InvalidArtifactError saying why, without waiting."""
    store = ArtifactStore(tmp_path)
    report = tmp_path / LAYOUT.layer1_problems_report
    report.parent.mkdir(parents=True)
    os.mkfifo(report)
    with anyio.fail_after(5), pytest.raises(InvalidArtifactError, match="named pipe"):
        await store.read_report(LAYOUT.layer1_problems_report)
    report.unlink()
    outside = tmp_path / "elsewhere.json"
    outside.write_text("{}")
    os.link(outside, report)
    with pytest.raises(InvalidArtifactError, match="2 hard links"):
        await store.read_report(LAYOUT.layer1_problems_report)


async def test_artifact_paths_are_walked_through_links_that_stay_inside(tmp_path: Path) -> None:
    """A report written and read through a link to another workspace folder lands in that
    folder, and the store names the file it wrote."""
    store = ArtifactStore(tmp_path)
    (tmp_path / "runs").mkdir()
    os.symlink("runs", tmp_path / "scenarios")
    report = Layer1ProblemsReport.model_validate_json(SEED_REPORT)
    written = await store.write(LAYOUT.layer1_problems_report, report)
    assert tmp_path / "runs" / LAYOUT.layer1_problems_report.relative_to("scenarios") == written
    assert report == await store.read_report(LAYOUT.layer1_problems_report)


async def test_artifact_paths_through_a_link_leading_outside_are_refused(tmp_path: Path) -> None:
    """Reading or writing through a link to a folder outside the workspace is refused with the
    sandbox's reason, and nothing lands outside."""
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    (workspace / "scenarios").mkdir(parents=True)
    outside.mkdir()
    os.symlink(outside, workspace / "scenarios" / LAYOUT.scenario)
    store = ArtifactStore(workspace)
    summary = FailureSummary(
        iteration=1, total_samples=1, passed_samples=1, failed_samples=0, success_rate=1.0
    )
    reason = "a symbolic link on this path leads outside the workspace"
    with pytest.raises(SandboxViolationError, match=reason):
        await store.write(LAYOUT.failure_summary, summary)
    with pytest.raises(SandboxViolationError, match=reason):
        await store.read_failure_summary(LAYOUT.failure_summary)
    assert [] == os.listdir(outside)


async def test_a_failed_artifact_write_removes_its_temp_file_from_the_folder_it_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the iteration folder is swapped for a link to outside mid-write and the write then
    fails, the temp file is removed from the real folder, not looked for through the link."""
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    folder = workspace / LAYOUT.directory
    folder.mkdir(parents=True)
    outside.mkdir()

    def swap_then_fail(fd: int) -> None:
        folder.rename(tmp_path / "parked")
        os.symlink(outside, folder)
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", swap_then_fail)
    summary = FailureSummary(
        iteration=1, total_samples=1, passed_samples=1, failed_samples=0, success_rate=1.0
    )
    with pytest.raises(OSError, match="Input/output error"):
        await ArtifactStore(workspace).write(LAYOUT.failure_summary, summary)
    assert ([], []) == (os.listdir(tmp_path / "parked"), os.listdir(outside))


# --- in a bucket (docs/storage.md, "What is stored where") ------------------------------------


async def test_artifacts_round_trip_through_a_bucket_as_the_workspace_holds_them(
    s3_url: str, tmp_path: Path
) -> None:
    """With a bucket, a written artifact is the object at its workspace path, the bytes a
    local write gives; it reads back equal, its iteration is listed, nothing is on disk."""
    bucket = open_storage(s3_url, tmp_path / "ws")
    store = ArtifactStore(tmp_path / "ws", bucket)
    local = ArtifactStore(tmp_path)
    report = Layer1ProblemsReport.model_validate_json(SEED_REPORT)
    path, sample = PER_SAMPLE[0]
    written = await store.write(LAYOUT.layer1_problems_report, report)
    await store.write(path, sample)
    on_disk = await local.write(LAYOUT.layer1_problems_report, report)
    assert str(LAYOUT.layer1_problems_report) == str(written)
    assert on_disk.read_bytes() == await bucket.read(str(LAYOUT.layer1_problems_report))
    assert report == await store.read_report(LAYOUT.layer1_problems_report)
    assert sample == await store.read(path, Sample)
    assert ([12], 13) == (
        await store.iterations(LAYOUT.scenario),
        await store.next_iteration(LAYOUT.scenario),
    )
    assert not (tmp_path / "ws").exists()


async def test_a_bucket_is_refused_an_invalid_artifact_and_reads_none(
    s3_url: str, tmp_path: Path
) -> None:
    """A sample whose id is not its file name is not stored; an invalid or missing object
    reads as an InvalidArtifactError saying why; a path out of the workspace is refused."""
    bucket = open_storage(s3_url, tmp_path)
    store = ArtifactStore(tmp_path, bucket)
    path, sample = PER_SAMPLE[0]
    with pytest.raises(InvalidArtifactError, match="does not match the file name"):
        await store.write(path.replace(SAMPLE_ID, "BS_MT_002"), sample)
    assert [] == list((await bucket.list()).objects)
    await bucket.write(str(LAYOUT.failure_summary), b'{"iteration": "one"}')
    with pytest.raises(InvalidArtifactError, match="iteration"):
        await store.read_failure_summary(LAYOUT.failure_summary)
    with pytest.raises(InvalidArtifactError, match="the file does not exist"):
        await store.read_report(LAYOUT.layer1_problems_report)
    with pytest.raises(SandboxViolationError, match="inside the workspace"):
        await store.read_report("../elsewhere/layer1_problems_report.json")
