"""The report `baton run` writes as a scenario ends: in the workspace, and, with a bucket,
also at `scenarios/NAME/report.html` in it (docs/storage.md, "What is stored where")."""

from __future__ import annotations

from pathlib import Path

from baton.runtime.token_log import TokenLog
from baton.server._scenario_reports import write_end_report
from baton.storage import open_storage
from tests.server.test_report import RECORDS, SCENARIO, write_log


async def test_with_a_bucket_the_end_report_is_also_put_in_the_scenarios_prefix(
    s3_url: str, tmp_path: Path
) -> None:
    """The page written to .baton/reports/ is also the object scenarios/NAME/report.html,
    byte for byte, where `baton pull NAME DIR` finds it."""
    write_log(tmp_path, RECORDS)
    storage = open_storage(s3_url, tmp_path)
    async with TokenLog.open(None) as log:
        path = await write_end_report(log, tmp_path, SCENARIO, storage=storage)
    assert tmp_path / ".baton" / "reports" / f"{SCENARIO}.html" == path
    assert path.read_bytes() == await storage.read(f"scenarios/{SCENARIO}/report.html")


async def test_a_bucket_that_refuses_the_page_leaves_the_workspaces_report(
    s3_url: str, tmp_path: Path
) -> None:
    """A bucket that cannot take the page does not lose the report: its workspace path is
    still given, for the summary to name."""
    write_log(tmp_path, RECORDS)
    missing = open_storage(s3_url.replace("s3://baton-", "s3://gone-"), tmp_path)
    async with TokenLog.open(None) as log:
        path = await write_end_report(log, tmp_path, SCENARIO, storage=missing)
    assert tmp_path / ".baton" / "reports" / f"{SCENARIO}.html" == path
