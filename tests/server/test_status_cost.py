"""`baton status` (and `GET /status`) shows what each scenario run has spent, and its cap."""

from __future__ import annotations

from pathlib import Path

import httpx2

from baton import Runtime
from baton.pipeline.host import open_pipeline
from baton.pipeline.messages import StartScenario
from baton.pipeline.scenario_state import ScenarioState
from baton.server import create_control_app
from baton.server._render import cost_figure, render_status
from baton.server._status_models import StatusReport
from baton.testing import read_token_log
from tests.pipeline.test_cost_cap import scripted, set_cap, settled, wait_for


async def test_status_shows_the_runs_cost_so_far_and_its_cap(tmp_path: Path) -> None:
    """GET /status carries the sum of the run's `cost_usd` and its cap; the table shows both."""
    scripted(tmp_path)
    set_cap(tmp_path, 500.0)
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        await rt.ask("scheduler", StartScenario(scenario="mini"))
        await wait_for(rt, "completed", "failed", "stopped")
        await settled(rt)
        app = create_control_app(rt, on_stop=lambda: None)
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://baton") as http:
            body = (await http.get("/status")).json()
    spent = sum(r["cost_usd"] for r in read_token_log(tmp_path) if r["event"] == "model.call")
    [scenario] = body["scenarios"]
    assert (round(spent, 6), 500.0) == (round(scenario["cost_usd"], 6), scenario["max_cost_usd"])
    table = render_status(StatusReport.model_validate(body))
    lines = table.splitlines()
    [at] = [i for i, line in enumerate(lines) if line.startswith("  mini: completed")]
    assert f"    cost: ${spent:,.2f} of $500.00 cap" == lines[at + 1]


def test_an_unknown_price_shows_a_dash_and_no_cap_shows_none() -> None:
    """A run with a call of unknown price costs "—"; an uncapped one names no cap."""
    unknown = ScenarioState(scenario="s", phase="executing", cost_usd=None)
    cheap = ScenarioState(scenario="s", phase="executing", cost_usd=0.0123, max_cost_usd=0.5)
    assert ("cost: —", "cost: $0.0123 of $0.5000 cap") == (
        cost_figure(unknown),
        cost_figure(cheap),
    )
