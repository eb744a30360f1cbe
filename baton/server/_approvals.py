"""What `baton status` and `baton show` say of a handoff awaiting approval: the package's
summary, its design files and the exact commands that decide it (docs/handoffs.md,
"Approval"); and what `baton show` says of the scenario's run."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from baton._write_rules import SCENARIOS_DIR
from baton.errors import BatonError
from baton.pipeline.packages import InitToExecuteContext, parse_package
from baton.pipeline.run_archive import runs_line

if TYPE_CHECKING:
    from baton.pipeline.scenario_state import ScenarioState

SUMMARY_CHARS = 400


def _one_line(text: str, limit: int = SUMMARY_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _workspace_flag(workspace: str | None) -> str:
    # The commands must work where they are pasted: outside the workspace they name it.
    if workspace in (None, "", "."):
        return ""
    return f" --workspace {shlex.quote(workspace)}"


def decide_commands(scenario: str, workspace: str | None = None) -> tuple[str, str]:
    """The `baton approve` and `baton reject` command lines for `scenario`."""
    name = shlex.quote(scenario)
    flag = _workspace_flag(workspace)
    return (f"baton approve {name}{flag}", f'baton reject {name} --reason "..."{flag}')


def _summary_and_files(package: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    try:
        parsed = parse_package(package)
    except BatonError:
        # A package this version cannot read: its fields as given, nothing invented.
        raw = package.get("design_artifacts")
        files = [(str(k), str(v)) for k, v in raw.items()] if isinstance(raw, dict) else []
        text = package.get("design_rationale") or package.get("user_requirement") or ""
        return str(text), files
    if isinstance(parsed, InitToExecuteContext):
        summary = parsed.design_rationale or parsed.user_requirement
        return summary, sorted(parsed.design_artifacts.items())
    return "", [(path, path) for path in parsed.referenced_paths()]


def pending_lines(state: ScenarioState, workspace: str | None = None) -> list[str]:
    """The lines describing `state`'s pending handoff, indented; none if nothing is pending."""
    pending = state.pending_approval
    if pending is None:
        return []
    package = pending.get("package")
    summary, files = _summary_and_files(package if isinstance(package, dict) else {})
    lines = [f"  handoff {pending.get('handoff_id', '?')} ({pending.get('handoff_type', '?')})"]
    lines.append(f"  summary: {_one_line(summary) if summary.strip() else '(none given)'}")
    if files:
        lines.append("  design files:")
        width = max(len(key) for key, _ in files)
        lines += [f"    {key.ljust(width)}  {path}" for key, path in files]
    else:
        lines.append("  design files: none listed")
    approve, reject = decide_commands(state.scenario, workspace)
    lines += [f"  approve: {approve}", f"  reject:  {reject}"]
    return lines


def render_show(
    state: ScenarioState, workspace: str | None = None, earlier: Sequence[int] = ()
) -> str:
    """`baton show SCENARIO`: the scenario's state, which run it is and where the `earlier`
    runs are kept (docs/handoffs.md, "Earlier runs"), and its pending handoff, if any."""
    lines = [f"{state.scenario}: {state.phase} (iteration {state.iteration})"]
    folder = Path(workspace or ".", SCENARIOS_DIR, state.scenario)
    kept = f" ({runs_line(folder, list(earlier))})" if earlier else ""
    lines.append(f"run: {state.run}{kept}")
    if state.requirement:
        lines.append(f"requirement: {_one_line(state.requirement)}")
    if state.waiting:
        lines.append(state.waiting)
    if state.reason:
        lines.append(f"reason: {_one_line(state.reason)}")
    if state.last_report:
        lines.append(f"last report: {state.last_report}")
    pending = pending_lines(state, workspace)
    if pending:
        lines.append("awaiting approval:")
        lines += pending
    else:
        lines.append("nothing is pending: no handoff awaits approval")
    return "\n".join(lines)
