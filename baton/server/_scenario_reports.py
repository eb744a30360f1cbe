"""The report `baton run` writes as each scenario ends (README.md, "What `baton run` shows"):
`.baton/reports/<scenario>.html`, the page `baton report --scenario` writes (README.md,
"Token report": the latest run, with a page per run beside it), once every record of the
scenario is on disk."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import anyio

from baton._log import get_logger
from baton.errors import BatonError
from baton.models.pricing import PRICES, ModelPrice
from baton.runtime.token_log import TokenLog
from baton.server._report_command import write_report

log = get_logger(__name__)


async def write_end_report(
    token_log: TokenLog,
    workspace: Path,
    scenario: str,
    prices: Mapping[str, ModelPrice] = PRICES,
) -> Path | None:
    """Write the scenario's report; its path, or None (logged) when it could not be written:
    a report is the run's by-product, it never stops the run."""
    if not await token_log.drained():
        log.warning("run.report_early", scenario=scenario, reason="token log still writing")
    try:
        return await anyio.to_thread.run_sync(
            lambda: write_report(workspace, scenario, None, prices=prices)
        )
    except (BatonError, OSError) as error:
        log.warning("run.report_failed", scenario=scenario, error=str(error))
        return None
