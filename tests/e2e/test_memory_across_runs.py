"""Long-term memory across runs: leave_application runs offline to completion, is submitted
again, and the second run's Init opens its first round with the first run's findings."""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from baton import Runtime
from baton.memory import open_memory
from baton.pipeline.host import open_pipeline
from baton.pipeline.messages import StartScenario
from baton.pipeline.scenario_state import ScenarioState
from baton.testing import read_token_log
from tests.e2e.test_leave_application import NAME, run_to_end, workspace

SECOND_RUN = f"{NAME}@2"
DEADLINE = 300.0


def _opening_text(payload: dict[str, object]) -> str:
    messages = payload["messages"]
    assert isinstance(messages, list)
    return json.dumps(messages[0]["content"], ensure_ascii=False)


async def test_a_resubmitted_scenario_starts_from_the_first_runs_findings(
    tmp_path: Path,
) -> None:
    """Run 1 stores a finding per iteration (what failed, then what fixed it); run 2's Init
    gets them in its AgentContext, and the recall is logged as `memory.recalled`."""
    ws = workspace(tmp_path)
    state, _ = await run_to_end(ws, environ={})
    assert ("completed", 2) == (state.phase, state.iteration)
    async with await open_memory(ws) as store:
        findings = await store.list(tags=[f"scenario:{NAME}", "kind:finding"])
    assert [("iteration:1",), ("iteration:2",)] == [
        tuple(t for t in f.tags if t.startswith("iteration:")) for f in findings
    ]
    assert "What failed" in findings[0].content
    assert "What fixed it" in findings[1].content

    async with Runtime.open(ws) as rt, open_pipeline(rt, environ={}) as pipeline:
        async with rt.token_log.follow() as records:
            second = await rt.ask("scheduler", StartScenario(scenario=NAME, auto_approve=True))
            assert isinstance(second, ScenarioState)
            with anyio.fail_after(DEADLINE):
                async for record in records:  # Init's first call of run 2 is what we wait for
                    if (record.get("event"), record.get("actor")) == ("model.call", "init"):
                        break
        assert pipeline.offline is not None
        openings = [
            _opening_text(call.payload)
            for call in pipeline.offline.calls
            if call.context.actor == "init" and call.context.conversation == SECOND_RUN
        ]
    assert openings, "run 2's Init made no call"
    first = openings[0]
    assert "## Recalled from long-term memory" in first
    for finding in findings:
        assert finding.id in first
    recalled = [
        e
        for e in read_token_log(ws)
        if e["event"] == "memory.recalled" and e["conversation"] == SECOND_RUN
    ]
    assert 2 <= recalled[0]["count"]
