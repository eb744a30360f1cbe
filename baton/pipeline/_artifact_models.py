"""Schemas of the files an iteration leaves on disk (docs/handoffs.md, "Artifact layout").

`Layer1ProblemsReport` is the handoff protocol's report, field for field. For the other files
the protocol names only their purpose, so their schemas are this runtime's design: each
requires the few fields other agents and the runtime rely on (ids, verdicts, a trace's
conversation_history + tool_calls + states) and keeps any other field, because the scenario's
own `format_specifications.json` (written by Init) is what shapes the rest.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

Severity = Literal["critical", "high", "medium", "low"]


class _Artifact(BaseModel):
    model_config = ConfigDict(extra="allow")


def _check_counts(total: int, failed: int) -> None:
    if failed > total:
        raise ValueError(f"failed_samples ({failed}) exceeds total_samples ({total})")


# --- layer1_problems_report.json (the protocol's report, field for field) ---------------------


class SuggestedFix(_Artifact):
    """Where and how to change the design to fix one Layer-1 problem."""

    target: str = Field(description="the design file to change, e.g. BusinessRules.md")
    section: str = Field(description="the section or key in that file")
    modification: str = Field(description="the change to make")
    rationale: str = Field(description="why it fixes the problem")


class Layer1Problem(_Artifact):
    """One problem in the design (Layer 1), with its evidence and a suggested fix."""

    problem_id: str = Field(description="e.g. L1P_001")
    problem_type: str = Field(description="e.g. BusinessRule_Unclear, Checker_Design")
    severity: Severity
    title: str
    description: str
    # A report may list a few ids (ending in "...") for a larger affected_count: the list may
    # be a sample of the affected ids, so the two are not required to agree.
    affected_samples: list[str]
    affected_count: int = Field(ge=0)
    evidence_summary: str
    typical_case_id: str
    suggested_fix: SuggestedFix


class ModificationPriority(_Artifact):
    """One entry of the order in which to apply the fixes."""

    priority: int = Field(ge=1)
    problem_id: str
    impact: str = Field(description="e.g. 解决9个失败case")
    estimated_improvement: str = Field(description="e.g. +33%")


class Layer1ProblemsReport(_Artifact):
    """`layer1_problems_report.json`: Execute's detailed account of design problems."""

    report_version: str
    generated_at: str = Field(description="ISO 8601")
    iteration: int = Field(ge=1)
    total_samples: int = Field(ge=0)
    failed_samples: int = Field(ge=0)
    failure_rate: float = Field(ge=0, le=1)
    layer1_problems: list[Layer1Problem]
    modification_priority: list[ModificationPriority]

    @model_validator(mode="after")
    def _counts_agree(self) -> Self:
        _check_counts(self.total_samples, self.failed_samples)
        return self


# --- failure_summary.json (designed here) -----------------------------------------------------


class FailureSummary(_Artifact):
    """`failure_summary.json`: the iteration's counts and the failing sample ids by cause."""

    iteration: int = Field(ge=1)
    total_samples: int = Field(ge=0)
    passed_samples: int = Field(ge=0)
    failed_samples: int = Field(ge=0)
    success_rate: float = Field(ge=0, le=1, description="passed / total, a fraction")
    failures_by_cause: dict[str, list[str]] = Field(
        default_factory=dict, description="failure type (e.g. Layer1_BusinessRule) → sample ids"
    )
    generated_at: str | None = None

    @model_validator(mode="after")
    def _counts_agree(self) -> Self:
        _check_counts(self.total_samples, self.failed_samples)
        if self.passed_samples + self.failed_samples != self.total_samples:
            raise ValueError(
                f"passed_samples ({self.passed_samples}) + failed_samples "
                f"({self.failed_samples}) must equal total_samples ({self.total_samples})"
            )
        return self


# --- per-sample files (designed here) ----------------------------------------------------------


class Sample(_Artifact):
    """`samples/<ID>.json`: one evaluation sample.

    Only the id is the runtime's: a sample's content (persona, initial state, user turns,
    expected outcome) is whatever the scenario's `format_specifications.json` says, so it is
    kept as extra fields rather than typed here, where it could contradict that spec.
    """

    sample_id: str = Field(min_length=1, description="stable across iterations, e.g. BS_MT_001")
    category: str | None = Field(None, description="e.g. multi_turn, boundary, policy_violation")
    description: str | None = None


class TraceMessage(_Artifact):
    """One turn of the evaluated conversation."""

    role: str = Field(description="user | assistant | tool | system")
    content: Any


class ToolCallRecord(_Artifact):
    """One tool call the evaluated agent made, with its arguments and result."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    is_error: bool = False
    turn: int | None = Field(None, ge=0, description="index into conversation_history")


class StateSnapshot(_Artifact):
    """The world state at one point of the run."""

    at: str = Field(description="initial | final | after_turn_<n>")
    state: dict[str, Any]


class ExecutionTrace(_Artifact):
    """`execution_traces/<ID>_trace.json`: conversation_history + tool_calls + states."""

    sample_id: str = Field(min_length=1)
    conversation_history: list[TraceMessage]
    tool_calls: list[ToolCallRecord]
    states: list[StateSnapshot] = Field(description="at least the initial and the final state")


class CheckerResult(_Artifact):
    """One checker's verdict on a sample, with its evidence."""

    checker_id: str
    passed: bool
    expected: Any = None
    actual: Any = None
    evidence: str | None = None


class LLMJudgement(_Artifact):
    """The LLM judge's verdict on a sample."""

    verdict: Literal["pass", "fail"]
    score: float | None = Field(None, ge=0, le=1)
    rationale: str


class EvaluationResult(_Artifact):
    """`evaluation_results/<ID>_eval.json`: checker results + the LLM judgement."""

    sample_id: str = Field(min_length=1)
    passed: bool = Field(description="the overall verdict")
    checker_results: list[CheckerResult]
    llm_judgement: LLMJudgement | None = Field(None, description="absent when no judge ran")


class AttributionAnalysis(_Artifact):
    """`attribution_analysis/<ID>_attribution.json`: which layer a failure belongs to, and why."""

    sample_id: str = Field(min_length=1)
    failure_type: str = Field(description="as in failure_samples_index, e.g. Layer1_BusinessRule")
    layer: Literal[1, 2, 3] = Field(description="1 design, 2 tools/checkers, 3 sample")
    root_cause: str
    evidence: list[str] = Field(default_factory=list)
    suggested_fix: str | None = None
    related_problem_id: str | None = Field(None, description="the L1P_… id in the report")
