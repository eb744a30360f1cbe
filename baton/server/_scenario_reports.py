"""The report `baton run` writes as each scenario ends (README.md, "What `baton run` shows"):
`.baton/reports/<scenario>.html`, the page `baton report --scenario` writes (README.md,
"Token report": the latest run, with a page per run beside it), once every record of the
scenario is on disk. With `[storage] url` the page is also put in the bucket, at
`scenarios/<scenario>/report.html`, so `baton pull` brings it with the scenario's files
(docs/storage.md, "What is stored where")."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from baton._log import get_logger
from baton._write_rules import SCENARIOS_DIR
from baton.errors import BatonError
from baton.models.pricing import PRICES, ModelPrice
from baton.runtime.token_log import TokenLog
from baton.server._report_command import write_report
from baton.server._report_data import LogRead

if TYPE_CHECKING:
    from baton.storage.protocol import Storage

log = get_logger(__name__)

_FLUSH_TIMEOUT = 2.0  # seconds this process's last lines may take to reach the stream

STORED_REPORT = "report.html"
"""The page's name in the scenario's prefix of the bucket."""


async def write_end_report(
    token_log: TokenLog,
    workspace: Path,
    scenario: str,
    prices: Mapping[str, ModelPrice] = PRICES,
    *,
    storage: Storage | None = None,
) -> Path | None:
    """Write the scenario's report, and put it in the bucket `storage` when there is one;
    its path, or None (logged) when it could not be written: a report is the run's
    by-product, it never stops the run."""
    if not await token_log.drained():
        log.warning("run.report_early", scenario=scenario, reason="token log still writing")
    read = await _every_process(token_log)
    try:
        path = await anyio.to_thread.run_sync(
            lambda: write_report(workspace, scenario, None, prices=prices, read=read)
        )
    except (BatonError, OSError) as error:
        log.warning("run.report_failed", scenario=scenario, error=str(error))
        return None
    if storage is not None:
        key = f"{SCENARIOS_DIR}/{scenario}/{STORED_REPORT}"
        try:
            await storage.write(key, await anyio.Path(path).read_bytes())
        except (BatonError, OSError) as error:
            # The page is still in the workspace: the run goes on, saying where it is.
            log.warning("run.report_not_stored", scenario=scenario, error=str(error))
    return path


async def _every_process(token_log: TokenLog) -> tuple[str, LogRead] | None:
    """With a Redis mailbox, every process's records from the stream they share, so the page
    shows the workers' calls too (docs/token-log.md, "Across processes"); None (this host's
    file, logged why) without one or when Redis does not answer."""
    relay = token_log.relay
    if relay is None:
        return None
    # Only with a Redis mailbox: a workspace on its own file loads no redis-py here.
    from redis.exceptions import RedisClusterException, RedisError  # noqa: PLC0415

    from baton.server._report_command import read_source  # noqa: PLC0415
    from baton.server._token_source import TokenSource  # noqa: PLC0415

    await relay.flushed(_FLUSH_TIMEOUT)
    try:
        # The runtime's own client (one server or a cluster), which the runtime closes.
        return await read_source(TokenSource(relay.client, url=relay.url, key=relay.key))
    except (BatonError, OSError, RedisError, RedisClusterException) as error:
        log.warning("run.report_from_file", reason=str(error))
        return None
