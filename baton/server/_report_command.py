"""`baton report`: write one self-contained HTML page of the token log (README.md,
"Token report"), and for a scenario one page per run beside it. It reads the files
directly, so no runtime needs to be running; with a Redis mailbox it reads every process's
lines from the stream they share (docs/token-log.md, "Across processes")."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from baton._private import STATE_DIR, private_dir, private_opener
from baton.models.pricing import ModelPrice
from baton.pipeline.config import load_config
from baton.server._log_location import checked_token_log
from baton.server._report_data import LogRead, load_reports
from baton.server._report_html import render

if TYPE_CHECKING:
    from baton.server._token_source import TokenSource

REPORTS = Path(".baton") / "reports"


def default_out(workspace: Path, scenario: str | None) -> Path:
    """`.baton/reports/<scenario or all>.html` in the workspace."""
    return workspace / REPORTS / f"{scenario or 'all'}.html"


def write_report(
    workspace: Path,
    scenario: str | None,
    out: Path | None,
    *,
    prices: Mapping[str, ModelPrice] | None = None,
    read: tuple[str, LogRead] | None = None,
) -> Path:
    """Render the report of `scenario` (its latest run; `NAME@N`: that run) or of the whole
    log into `out`; the path written. Without `out`, a scenario's page goes to
    `.baton/reports/<scenario>.html` with a page per run beside it (`NAME@N.html`), which
    its run list links to.

    Costs are the calls' own `cost_usd`; a line from before it is priced from its tokens
    with `prices` (default: the workspace's baton.toml `[prices]` over the package's).
    `read`: the records to draw, already read (from the Redis stream), and where from.
    """
    if prices is None:
        prices = load_config(workspace).price_table
    if read is None:
        main, *runs = load_reports(checked_token_log(workspace), scenario, prices=prices)
    else:
        main, *runs = load_reports(read[0], scenario, prices=prices, read=read[1])
    links = out is None and scenario is not None
    target = out if out is not None else default_out(workspace, scenario)
    _write(target, render(main, links=links))
    if links:
        for report in runs:
            _write(default_out(workspace, report.scope), render(report, links=True))
    return target


def _write(target: Path, page: str) -> None:
    """Write `page` to a temporary file and rename it, so a reader never sees half a page."""
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    if STATE_DIR in target.parts:
        # Under .baton/ like every file of a run's state: 0600 in 0700 (README.md, "Sandbox
        # and file modes"); a page written where the user said keeps the umask's mode.
        private_dir(target.parent)
        with open(partial, "w", encoding="utf-8", opener=private_opener) as file:
            file.write(page)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(page, encoding="utf-8")
    partial.replace(target)


async def stream_read(url: str, prefix: str) -> tuple[str, LogRead]:
    """Every record of the deployment's token-log stream (every process's lines), read as a
    report reads its files, and where they came from (for messages)."""
    # Only with a Redis URL: a report of the file loads no redis-py.
    from baton.server._token_source import TokenSource  # noqa: PLC0415

    async with TokenSource.open(url, prefix) as source:
        return await read_source(source)


async def read_source(source: TokenSource) -> tuple[str, LogRead]:
    """What `stream_read` reads, from an open `source`."""
    from baton.runtime.settings import redact_url  # noqa: PLC0415
    from baton.server._report_data import take  # noqa: PLC0415

    read = LogRead()
    async for _, line in source.history():
        try:
            record = json.loads(line)
        except ValueError:
            record = None  # torn: counted as a file's torn line is
        take(read, record)
    return f"the stream {source.key} of {redact_url(source.url)}", read
