"""The iteration policy (docs/handoffs.md, "Iteration policy") as a pure function of an
iteration's numbers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from baton.pipeline.artifacts import FailureSummary, Layer1ProblemsReport
from baton.pipeline.scenario import IterationPolicy

Verdict = Literal["complete", "return_to_init", "iterate", "fail"]


@dataclass(frozen=True)
class Decision:
    """What to do after an iteration, and why (the reason goes into the next AgentContext)."""

    verdict: Verdict
    reason: str
    success_rate: float | None
    critical_share: float | None


def critical_share(report: Layer1ProblemsReport) -> float:
    """Share of the iteration's samples affected by critical Layer-1 problems."""
    if report.total_samples == 0:
        return 0.0
    affected: set[str] = set()
    counted = 0
    for problem in report.layer1_problems:
        if problem.severity == "critical":
            named = {s for s in problem.affected_samples if s != "..."}
            affected |= named
            counted += max(problem.affected_count - len(named), 0)
    return min(1.0, (len(affected) + counted) / report.total_samples)


def decide(
    policy: IterationPolicy,
    *,
    iteration: int,
    summary: FailureSummary | None,
    report: Layer1ProblemsReport | None,
) -> Decision:
    """Completed at the success threshold; back to Init past the critical share; failed at
    max_iterations; otherwise Execute iterates again."""
    rate = summary.success_rate if summary is not None else None
    if rate is None and report is not None and report.total_samples:
        rate = 1 - report.failed_samples / report.total_samples
    share = critical_share(report) if report is not None else None
    if rate is not None and rate >= policy.success_threshold:
        return Decision(
            "complete",
            f"success rate {rate:.0%} ≥ {policy.success_threshold:.0%}",
            rate,
            share,
        )
    if iteration >= policy.max_iterations:
        return Decision(
            "fail",
            f"{iteration} iterations (max_iterations {policy.max_iterations}) without reaching "
            f"{policy.success_threshold:.0%}",
            rate,
            share,
        )
    if share is not None and share > policy.layer1_critical_share:
        return Decision(
            "return_to_init",
            f"critical Layer-1 problems affect {share:.0%} of samples "
            f"(> {policy.layer1_critical_share:.0%})",
            rate,
            share,
        )
    return Decision(
        "iterate", "below the success threshold; fix Layers 2-3 and iterate", rate, share
    )
