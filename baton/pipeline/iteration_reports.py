"""What the Scheduler reads of a finished iteration: its failure summary and Layer-1 report,
the findings it passes on to the next dispatch (docs/handoffs.md, "Iteration policy"), and the
token-log lines of each iteration's outcome and of the run's end (docs/token-log.md, "Fields")."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

import baton.pipeline.records  # noqa: F401 - `iteration.ended`, `scenario.ended` registered
from baton._log import get_logger
from baton.agents.agent_config import TokenSink
from baton.errors import BatonError
from baton.pipeline.artifacts import ArtifactStore, FailureSummary, Layer1ProblemsReport
from baton.pipeline.packages import ExecuteToInitContext, HandoffPackage, ScenarioCompletion
from baton.pipeline.scenario import ScenarioRecord
from baton.pipeline.scheduling_policy import Decision

log = get_logger(__name__)

_ITERATION = re.compile(r"iteration_(\d+)")


def iteration_of(execution_output_dir: str) -> int:
    """The N of `.../iteration_N` (0 when the path names none)."""
    found = _ITERATION.search(execution_output_dir)
    return int(found.group(1)) if found else 0


def _join(directory: str, relative: str) -> str:
    return str(PurePosixPath(directory) / relative)


async def read_iteration(
    artifacts: ArtifactStore, package: HandoffPackage, output_dir: str
) -> tuple[FailureSummary | None, Layer1ProblemsReport | None, str | None]:
    """The iteration's failure summary and report, and the report's path (None when missing:
    a missing or invalid file is logged and decided on as absent, never fatal)."""
    report_rel = None
    if isinstance(package, ExecuteToInitContext):
        report_rel = package.layer1_problems_report_path
    elif isinstance(package, ScenarioCompletion):
        report_rel = package.report_paths.get("layer1_problems_report")
    report_path: str | None = _join(output_dir, report_rel or "layer1_problems_report.json")
    summary_path = _join(output_dir, "failure_summary.json")
    summary = report = None
    try:
        summary = await artifacts.read_failure_summary(summary_path)
    except (BatonError, OSError) as exc:
        log.warning("scheduler.no_failure_summary", path=summary_path, error=str(exc))
    try:
        report = await artifacts.read_report(str(report_path))
    except (BatonError, OSError) as exc:
        log.warning("scheduler.no_report", path=report_path, error=str(exc))
        report_path = None
    return summary, report, report_path


def iteration_findings(package: HandoffPackage, decision: Decision) -> dict[str, Any]:
    """What the next dispatch's `AgentContext` learns of the iteration."""
    findings: dict[str, Any] = {
        "success_rate": decision.success_rate,
        "critical_share": decision.critical_share,
        "verdict": decision.reason,
    }
    if isinstance(package, ExecuteToInitContext):
        findings["trigger_reason"] = package.trigger_reason
        findings["modification_suggestions"] = package.modification_suggestions_summary
        findings["failed_samples"] = [s.get("sample_id") for s in package.failure_samples_index]
    return {"last_iteration": findings}


def emit_iteration_ended(
    token_log: TokenSink,
    record: ScenarioRecord,
    package: HandoffPackage,
    decision: Decision,
    *,
    summary: FailureSummary | None,
    report: Layer1ProblemsReport | None,
) -> None:
    """The iteration's `iteration.ended` token-log line: its verdict and success rate, with
    the samples behind it when a file gave them (docs/token-log.md, "Fields")."""
    passed = total = None
    if summary is not None:
        passed, total = summary.passed_samples, summary.total_samples
    elif report is not None and report.total_samples:
        passed, total = report.total_samples - report.failed_samples, report.total_samples
    token_log.emit(
        "iteration.ended",
        scenario=record.scenario,
        conversation=record.conversation,
        iteration=record.iteration,
        handoff_type=package.handoff_type,
        verdict=decision.verdict,
        reason=decision.reason,
        success_rate=decision.success_rate,
        passed_samples=passed,
        total_samples=total,
    )


def emit_scenario_ended(token_log: TokenSink, record: ScenarioRecord) -> None:
    """The run's `scenario.ended` token-log line, once its end is saved: what `baton report`
    shows as the run's outcome (docs/token-log.md, "Fields")."""
    token_log.emit(
        "scenario.ended",
        scenario=record.scenario,
        conversation=record.conversation,
        outcome=record.phase,
        reason=record.reason or "",
        iterations=record.iteration,
    )
