"""The pipeline's agents' summary schemas: what Init's, Execute's and the Scheduler's
compactions keep (docs/context.md, "Summary schemas"); any other agent's is the context
engine's `GenericSummary`."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from baton.context.summary_format import GenericSummary, SummaryBase, SummarySection

# --- Init ------------------------------------------------------------------------------------


class DesignSummary(SummarySection):
    unified_scenario_design: str = ""
    business_rules_key_points: list[str] = Field(default_factory=list)
    format_specifications: str = ""


class ExecuteFeedbackSummary(SummarySection):
    execution_output_dir: str | None = None
    total_failure_samples: int | None = None
    layer1_problems_summary: list[str] = Field(default_factory=list)


class InitSummary(SummaryBase):
    """The Init agent's summary: design, Execute's feedback, conclusions, pending actions."""

    agent: ClassVar[str] = "init"

    current_design_summary: DesignSummary
    execute_feedback_summary: ExecuteFeedbackSummary
    analysis_conclusions: list[str]
    pending_actions: list[str]

    @classmethod
    def empty(cls) -> dict[str, Any]:
        """A valid Init summary with nothing in it."""
        return {
            "current_design_summary": {},
            "execute_feedback_summary": {},
            "analysis_conclusions": [],
            "pending_actions": [],
            "key_paths": {},
        }


# --- Execute ---------------------------------------------------------------------------------


class GeneratedComponents(SummarySection):
    tools: list[str] = Field(default_factory=list)
    checkers: list[str] = Field(default_factory=list)
    samples: str = ""


class EvaluationProgress(SummarySection):
    current_iteration: int | None = None
    success_rate: str | None = None
    layer_status: str | None = None


class IdentifiedIssues(SummarySection):
    layer2_problems: list[str] = Field(default_factory=list)
    layer3_problems: list[str] = Field(default_factory=list)
    fix_attempts: list[str] = Field(default_factory=list)


class ExecuteSummary(SummaryBase):
    """The Execute agent's summary: components, evaluation progress, issues, pending work."""

    agent: ClassVar[str] = "execute"
    pending_field: ClassVar[str] = "pending_work"

    generated_components: GeneratedComponents
    evaluation_progress: EvaluationProgress
    identified_issues: IdentifiedIssues
    pending_work: list[str]

    @classmethod
    def empty(cls) -> dict[str, Any]:
        """A valid Execute summary with nothing in it."""
        return {
            "generated_components": {},
            "evaluation_progress": {},
            "identified_issues": {},
            "pending_work": [],
            "key_paths": {},
        }


# --- Scheduler ---------------------------------------------------------


class ScenarioStatus(SummarySection):
    phase: str = ""
    iteration: int | None = None
    last_dispatch: str | None = None


class SchedulerSummary(SummaryBase):
    """The Scheduler's summary (its system prompt): per-scenario status, pending, paths."""

    agent: ClassVar[str] = "scheduler"

    scenarios: dict[str, ScenarioStatus]
    pending_actions: list[str]

    @classmethod
    def empty(cls) -> dict[str, Any]:
        """A valid Scheduler summary with nothing in it."""
        return {"scenarios": {}, "pending_actions": [], "key_paths": {}}


SUMMARY_SCHEMAS: dict[str, type[SummaryBase]] = {
    "init": InitSummary,
    "execute": ExecuteSummary,
    "scheduler": SchedulerSummary,
    "generic": GenericSummary,
}


def summary_schema_for(agent: str) -> type[SummaryBase]:
    """The schema of agent kind `agent`; `GenericSummary` for kinds without their own."""
    return SUMMARY_SCHEMAS.get(agent, GenericSummary)
