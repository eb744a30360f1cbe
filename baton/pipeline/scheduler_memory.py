"""The Scheduler's long-term memory (README.md, "Long-term memory"): each iteration's findings
go in, and each work order to Init or Execute carries what is recalled for the requirement.

A finding says what failed (the failure summary's causes, the report's problems and their
suggested fixes, Execute's reason for returning) and, once an iteration meets the criteria
after earlier ones did not, what fixed it (the changes the previous iteration asked for). It
is tagged `scenario:<name>` (the base name: every run of the scenario shares it), `kind:finding`
and `iteration:<n>`, so a scenario submitted again starts from what its earlier runs learnt.

Memory is an aid, never a dependency: a store that fails is logged and the work goes on
without it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import baton.pipeline.records  # noqa: F401 - `memory.recalled`, registered with the token log
from baton._log import get_logger
from baton.agents.agent_config import TokenSink
from baton.agents.tools.memory import scenario_tag
from baton.context.tokens import estimate_text_tokens
from baton.errors import BatonError
from baton.memory import MemoryEntry, MemorySource, MemoryStore, render_entry
from baton.memory.store import CONTEXT_HEADER
from baton.pipeline.artifacts import FailureSummary, Layer1ProblemsReport
from baton.pipeline.memory_config import MemoryConfig
from baton.pipeline.packages import ExecuteToInitContext, HandoffPackage, ScenarioCompletion
from baton.pipeline.scenario import ScenarioRecord
from baton.pipeline.scenario_state import SCHEDULER
from baton.pipeline.scheduling_policy import Decision

log = get_logger(__name__)

FINDING_TAG: Final = "kind:finding"
MAX_FINDING_CHARS: Final = 3000
_MAX_ITEM_CHARS: Final = 300
_MAX_ITEMS: Final = 5


def _clip(text: Any, limit: int = _MAX_ITEM_CHARS) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _ids(ids: Iterable[str]) -> str:
    listed = list(ids)
    shown = ", ".join(listed[:_MAX_ITEMS])
    return shown + (f", ... ({len(listed)} in all)" if len(listed) > _MAX_ITEMS else "")


def _percent(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.0%}"


def _previous(record: ScenarioRecord) -> dict[str, Any]:
    # What the Scheduler learnt of the iteration before this one (`iteration_findings`),
    # read before this iteration's findings are merged over it.
    execute = record.findings.get("execute")
    last = execute.get("last_iteration") if isinstance(execute, dict) else None
    return last if isinstance(last, dict) else {}


def iteration_finding(
    record: ScenarioRecord,
    package: HandoffPackage,
    decision: Decision,
    summary: FailureSummary | None,
    report: Layer1ProblemsReport | None,
) -> str:
    """The text of one iteration's finding: what failed, and what fixed it."""
    lines = [
        f"{record.scenario} iteration {record.iteration} (run {record.run}): "
        f"{decision.verdict}; success rate {_percent(decision.success_rate)}. "
        f"{_clip(decision.reason)}"
    ]
    if summary is not None and summary.failures_by_cause:
        causes = "; ".join(
            f"{cause}: {len(ids)} samples ({_ids(ids)})"
            for cause, ids in summary.failures_by_cause.items()
            if ids
        )
        if causes:
            lines.append(f"What failed: {causes}.")
    if report is not None:
        for problem in report.layer1_problems[:_MAX_ITEMS]:
            fix = problem.suggested_fix
            lines.append(
                f"Problem {problem.problem_id} [{problem.severity}] {_clip(problem.title)}; "
                f"fix in {fix.target} ({_clip(fix.section, 80)}): {_clip(fix.modification)}"
            )
    if isinstance(package, ExecuteToInitContext):
        lines.append(f"Execute returned to Init: {_clip(package.trigger_reason)}")
        if package.modification_suggestions_summary:
            suggestions = "; ".join(
                _clip(s) for s in package.modification_suggestions_summary[:_MAX_ITEMS]
            )
            lines.append(f"Suggested changes: {suggestions}")
    previous = _previous(record)
    if decision.verdict == "complete" and previous:
        changes = previous.get("modification_suggestions") or []
        applied = "; ".join(_clip(c) for c in changes[:_MAX_ITEMS]) if changes else ""
        lines.append(
            f"What fixed it: up from {_percent(previous.get('success_rate'))} in the iteration "
            "before, after "
            + (f"these changes: {applied}" if applied else "the design was revised")
        )
    if isinstance(package, ScenarioCompletion) and package.completion_summary:
        lines.append(f"Delivered: {_clip(package.completion_summary)}")
    text = "\n".join(lines)
    return text if len(text) <= MAX_FINDING_CHARS else text[: MAX_FINDING_CHARS - 3] + "..."


class SchedulerMemory:
    """What the Scheduler stores after each iteration and recalls for each work order."""

    def __init__(self, store: MemoryStore, config: MemoryConfig, token_log: TokenSink) -> None:
        self.store = store
        self.config = config
        self._token_log = token_log

    async def record_finding(
        self, record: ScenarioRecord, finding: str, decision: Decision
    ) -> MemoryEntry | None:
        """Store an iteration's finding (`iteration_finding`'s text), or log why it was not."""
        tags = (scenario_tag(record.scenario), FINDING_TAG, f"iteration:{record.iteration}")
        try:
            # Stored before a crash, with the handoff that led to it delivered again: one
            # finding per run and iteration, or the next work orders would recall it twice.
            for known in await self.store.list(tags=tags):
                if known.metadata.get("run") == record.run:
                    log.info("scheduler.finding_known", scenario=record.scenario, entry=known.id)
                    return known
            entry = await self.store.remember(
                finding,
                tags=tags,
                source=MemorySource(agent=SCHEDULER, conversation=record.conversation),
                metadata={
                    "run": record.run,
                    "verdict": decision.verdict,
                    "success_rate": decision.success_rate,
                },
            )
        except (BatonError, OSError) as error:
            log.warning("scheduler.memory_not_stored", scenario=record.scenario, error=str(error))
            return None
        log.info("scheduler.finding_stored", scenario=record.scenario, entry=entry.id)
        return entry

    async def recall(self, record: ScenarioRecord, agent: str) -> str:
        """The scenario's entries recalled for its requirement, as text within the memory
        budget ("" when there are none); logged as `memory.recalled`.

        Ranked by the requirement first; when fewer than `recall_limit` share its words, the
        scenario's newest entries fill the rest: every entry of the scenario bears on it, and
        a finding's wording seldom repeats the requirement's."""
        budget = self.config.memory_budget_tokens
        limit = self.config.recall_limit
        if budget <= 0:
            return ""
        tags = (scenario_tag(record.scenario),)
        try:
            ranked = [
                hit.entry
                for hit in await self.store.recall(record.requirement, tags=tags, limit=limit)
            ]
            if len(ranked) < limit:
                newest = reversed(await self.store.list(tags=tags))
                seen = {entry.id for entry in ranked}
                ranked += [entry for entry in newest if entry.id not in seen][: limit - len(ranked)]
        except (BatonError, OSError) as error:
            log.warning("scheduler.memory_not_recalled", scenario=record.scenario, error=str(error))
            return ""
        text, chosen, tokens = fit_budget(ranked, budget)
        self._token_log.emit(
            "memory.recalled",
            scenario=record.scenario,
            conversation=record.conversation,
            count=len(chosen),
            tokens=tokens,
        )
        log.info("scheduler.memory_recalled", to=agent, count=len(chosen))
        return text


def fit_budget(entries: list[MemoryEntry], budget: int) -> tuple[str, list[MemoryEntry], int]:
    """The entries, in order, that fit `budget` tokens rendered as one block (as
    `MemoryStore.context` renders it; one that does not fit is skipped, a smaller one after
    it may still be taken): the text, the entries taken and the text's estimated tokens."""
    chosen: list[MemoryEntry] = []
    text, tokens = "", 0
    for entry in entries:
        candidate = "\n\n".join([CONTEXT_HEADER, *map(render_entry, [*chosen, entry])])
        candidate_tokens = estimate_text_tokens(candidate)
        if candidate_tokens <= budget:
            chosen.append(entry)
            text, tokens = candidate, candidate_tokens
    return text, chosen, tokens
