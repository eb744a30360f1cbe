"""`baton status` shows what heals by itself: an actor cooling down after a spent restart
budget (until when), and a scenario waiting for the model (retrying when)."""

from __future__ import annotations

from baton.pipeline.errors import NoSchedulerError
from baton.pipeline.scenario_state import ScenarioState
from baton.server._render import render_status
from baton.server._status_models import ActorReport, StatusReport


def test_status_shows_a_cooling_actor_and_a_waiting_scenario() -> None:
    """The cool-down's reason and restart time under the table; the waiting note on the
    scenario's line instead of the reason for its last dispatch."""
    cooling = "cooling down until 12:04:05: restart intensity exceeded (5 restarts in 60s)"
    report = StatusReport(
        pid=7,
        workspace="/ws",
        actors=[
            ActorReport(
                name="scheduler",
                actor_type="SchedulerActor",
                state="cooling_down",
                mailbox_depth=2,
                mailbox_capacity=1024,
                handled=4,
                failures=6,
                restarts=5,
                stop_reason=cooling,
            )
        ],
        scheduler=True,
        scenarios=[
            ScenarioState(
                scenario="mini",
                phase="designing",
                reason="a new scenario: design it from the requirement",
                waiting="waiting: init: API unreachable, retrying at 12:03:04",
            )
        ],
        pending_approvals=[],
        dead_letters=0,
        token_log=None,
        token_records=0,
    )
    lines = render_status(report).splitlines()
    assert f"  scheduler: {cooling}" == lines[3]
    assert (
        "  mini: designing (iteration 0) — waiting: init: API unreachable, retrying at 12:03:04"
        == lines[5]
    )


def test_no_scheduler_says_it_stopped_and_what_to_do() -> None:
    """`NoSchedulerError` no longer claims `baton run` never starts a scheduler: it says the
    scheduler is not running, where to look, and that restarting `baton run` starts it."""
    message = str(NoSchedulerError())
    assert "does not start one" not in message
    assert message.startswith("no 'scheduler' actor is running in this runtime")
    assert "`baton status` shows why" in message
    assert "restarting `baton run` starts it again" in message
