"""One iteration's per-sample files: sample, trace, evaluation and (for failures) attribution.

`run_iteration` plays all 27 samples and evaluates them; it refuses to return a run whose
checker verdicts disagree with the failure cause recorded in `_samples.py`, so the story
the reports tell is the one the traces show.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from tools.leave_application_script._dialogue import Cause, SampleSpec, User
from tools.leave_application_script._evaluate import (
    REFUSE_CHECKERS,
    SUBMIT_CHECKERS,
    attribution,
    judge,
    run_checkers,
)
from tools.leave_application_script._samples import all_samples
from tools.leave_application_script._simulate import Trace, initial_state, play
from tools.leave_application_script._world import BALANCES, SCENARIO_DIR

# When Execute ran each iteration (fixed: the script must not read the clock).
RUN_STARTS: Final = {1: datetime(2026, 1, 4, 14, 0), 2: datetime(2026, 1, 5, 9, 30)}


def iteration_dir(iteration: int) -> str:
    """`scenarios/leave_application/execution_outputs/iteration_N` (workspace-relative)."""
    return f"{SCENARIO_DIR}/execution_outputs/iteration_{iteration}"


def stamp(moment: datetime) -> str:
    """An ISO 8601 UTC timestamp, e.g. 2026-01-04T14:02:30Z."""
    return moment.isoformat(timespec="seconds") + "Z"


def to_json(document: dict[str, Any]) -> str:
    """A file's text as format_specifications.json asks: indented, CJK unescaped."""
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


@dataclass(frozen=True)
class SampleRun:
    """One sample in one iteration: its trace, verdicts and (if failed) attribution."""

    spec: SampleSpec
    iteration: int
    trace: Trace
    checks: list[dict[str, Any]]
    judgement: dict[str, Any]
    cause: Cause | None

    @property
    def passed(self) -> bool:
        return all(c["passed"] for c in self.checks) and self.judgement["verdict"] == "pass"

    @property
    def failed_checkers(self) -> list[str]:
        return [c["checker_id"] for c in self.checks if not c["passed"]]

    @property
    def sample_id(self) -> str:
        return self.spec.sample_id

    def relative(self, kind: str) -> str:
        """A file of this sample relative to the iteration directory."""
        sid = self.sample_id
        return {
            "sample": f"samples/{sid}.json",
            "trace": f"execution_traces/{sid}_trace.json",
            "evaluation": f"evaluation_results/{sid}_eval.json",
            "attribution": f"attribution_analysis/{sid}_attribution.json",
        }[kind]

    def path(self, kind: str) -> str:
        """A file of this sample relative to the workspace."""
        return f"{iteration_dir(self.iteration)}/{self.relative(kind)}"


def run_sample(spec: SampleSpec, iteration: int) -> SampleRun:
    """Play and evaluate one sample; fail loudly if the outcome contradicts its spec."""
    trace = play(spec, iteration)
    checks = run_checkers(spec, iteration, trace)
    cause = spec.iter1 if iteration == 1 else spec.iter2
    run = SampleRun(spec, iteration, trace, checks, judge(spec, iteration, trace), cause)
    if run.passed != (cause is None):
        raise AssertionError(
            f"{spec.sample_id} iteration {iteration}: recorded cause {cause!r} but failed "
            f"checkers {run.failed_checkers} / verdict {run.judgement['verdict']}"
        )
    return run


def run_iteration(iteration: int) -> list[SampleRun]:
    """All 27 samples of an iteration, by ID."""
    return [run_sample(spec, iteration) for spec in all_samples()]


def _expected_outcome(spec: SampleSpec, iteration: int) -> dict[str, Any]:
    action = spec.expected_action(iteration)
    if action == "refuse":
        return {
            "action": "refuse",
            "violated_rule": spec.rule,
            "reason": _refusal_reason(spec.rule or "", iteration),
            "state_must_not_change": True,
        }
    request = spec.request
    by_year = request.days_by_year()
    finals = {
        str(y): {
            request.leave_type: round(BALANCES[spec.employee_id][y][request.leave_type] - d, 2)
        }
        for y, d in sorted(by_year.items())
    }
    return {
        "action": "submit",
        "application": {
            "leave_type": request.leave_type,
            "start_date": request.start.isoformat(),
            "end_date": request.end.isoformat(),
            "start_half": request.start_half,
            "end_half": request.end_half,
            "days": request.total,
            "reason": request.reason,
        },
        "days_by_year": {str(y): d for y, d in sorted(by_year.items())},
        "expected_final_balances": finals,
        "approver_chain": spec.approvers(),
    }


# Why each refusal sample must be refused. In iteration 1 Execute misread rule 9 as "fewer
# than 3 days" (BS_MT_026's wrong expectation); iteration 2 quotes the rule as written.
_REFUSAL_REASONS: Final = {
    "R1": "只能为本人申请，不得替同事提交",
    "R6": "试用期员工不享有年假",
    "R8": "病假超过 2 天须提供病假证明编号，员工无法提供",
    "R9": "事假单次不超过 3 天（含 3 天），超过即超限",
    "R10": "补请假超过请假日期后 7 天",
}
_R9_ITERATION_1: Final = "事假单次须少于 3 天，3 天及以上即超限"


def _refusal_reason(rule: str, iteration: int) -> str:
    return _R9_ITERATION_1 if (rule, iteration) == ("R9", 1) else _REFUSAL_REASONS[rule]


_REVISION_NOTES: Final = {
    (26, 2): "iteration_1 的期望误把 3 天事假当作超限（规则为“不超过 3 天”，含 3 天），已改为 "
    "submit 并补充扣减与审批链期望。",
    (23, 2): "reason 按第 9 条原文更正为“不超过 3 天”；4 天仍超限，期望不变。",
}


def sample_document(spec: SampleSpec, iteration: int) -> dict[str, Any]:
    """`samples/<ID>.json`."""
    person = spec.person
    action = spec.expected_action(iteration)
    document: dict[str, Any] = {
        "sample_id": spec.sample_id,
        "category": spec.category,
        "description": spec.title,
        "iteration": iteration,
        "persona": {
            "employee_id": person.employee_id,
            "name": person.name,
            "department": person.department,
            "style": spec.persona,
        },
        "user_goal": spec.user_goal,
        "user_script": [beat.text for beat in spec.dialogue if isinstance(beat, User)],
        "initial_state": initial_state(spec),
        "expected_outcome": _expected_outcome(spec, iteration),
        "applicable_checkers": list(REFUSE_CHECKERS if action == "refuse" else SUBMIT_CHECKERS),
        "max_turns": 14,
        "difficulty": spec.difficulty,
        "tags": list(spec.tags),
    }
    if spec.request_for:
        document["expected_outcome"]["requested_for"] = spec.request_for
    if (spec.number, iteration) in _REVISION_NOTES:
        document["revision_note"] = _REVISION_NOTES[(spec.number, iteration)]
    return document


def _started(run: SampleRun) -> datetime:
    return RUN_STARTS[run.iteration] + timedelta(seconds=150 * (run.spec.number - 1))


def trace_document(run: SampleRun) -> dict[str, Any]:
    """`execution_traces/<ID>_trace.json`."""
    trace = run.trace
    started = _started(run)
    finished = started + timedelta(seconds=18 + 7 * len(trace.conversation))
    return {
        "sample_id": run.sample_id,
        "iteration": run.iteration,
        "design_version": f"v{run.iteration}",
        "agent_under_test": {
            "name": "leave-assistant",
            "model": "claude-sonnet-4-5",
            "instructions": f"BusinessRules.md v{run.iteration} + unified_scenario_design.yaml "
            "tools",
            "acting_as": f"{run.spec.person.name}（{run.spec.employee_id}）",
        },
        "user_simulator": {"model": "claude-haiku-4-5", "persona": run.spec.persona},
        "started_at": stamp(started),
        "finished_at": stamp(finished),
        "conversation_turns": trace.conversation_turns,
        "conversation_history": trace.conversation,
        "tool_calls": trace.tool_calls,
        "states": [
            {"at": "initial", "state": trace.initial_state},
            {"at": "final", "state": trace.final_state},
        ],
    }


def evaluation_document(run: SampleRun) -> dict[str, Any]:
    """`evaluation_results/<ID>_eval.json`."""
    return {
        "sample_id": run.sample_id,
        "iteration": run.iteration,
        "passed": run.passed,
        "failed_checkers": run.failed_checkers,
        "checker_results": run.checks,
        "llm_judgement": run.judgement,
        "evaluated_at": stamp(_started(run) + timedelta(seconds=140)),
    }


def attribution_document(run: SampleRun) -> dict[str, Any]:
    """`attribution_analysis/<ID>_attribution.json` (failed runs only)."""
    assert run.cause is not None
    return attribution(run.spec, run.iteration, run.trace, run.checks, run.cause)


def sample_text(run: SampleRun) -> str:
    """The text of `samples/<ID>.json`."""
    return to_json(sample_document(run.spec, run.iteration))


def sample_files(run: SampleRun) -> list[tuple[str, str]]:
    """(workspace path, text) of every file Execute writes for one sample."""
    files = [
        (run.path("sample"), sample_text(run)),
        (run.path("trace"), to_json(trace_document(run))),
        (run.path("evaluation"), to_json(evaluation_document(run))),
    ]
    if not run.passed:
        files.append((run.path("attribution"), to_json(attribution_document(run))))
    return files
