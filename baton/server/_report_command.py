"""`baton report`: write one self-contained HTML page of the token log (README.md,
"Token report"). It reads the files directly, so no runtime needs to be running."""

from __future__ import annotations

import os
from pathlib import Path

from baton.errors import StateFileError
from baton.runtime.token_log import TOKEN_LOG
from baton.server._report_data import load_report
from baton.server._report_html import render

REPORTS = Path(".baton") / "reports"


def default_out(workspace: Path, scenario: str | None) -> Path:
    """`.baton/reports/<scenario or all>.html` in the workspace."""
    return workspace / REPORTS / f"{scenario or 'all'}.html"


def write_report(workspace: Path, scenario: str | None, out: Path | None) -> Path:
    """Render the report of `scenario` (or of the whole log) into `out`; the path written.

    The page is written to a temporary file and renamed, so a reader never sees half a page.
    """
    log = workspace / TOKEN_LOG
    if log.is_dir():
        raise StateFileError(log, "is a directory, not the token log", "move it aside")
    page = render(load_report(log, scenario))
    target = out if out is not None else default_out(workspace, scenario)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    partial.write_text(page, encoding="utf-8")
    partial.replace(target)
    return target
