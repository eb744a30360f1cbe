"""`baton status` with no process running: what the workspace's files say, and that nothing
runs (README.md, "Running baton").

The scenarios' records (`.baton/scheduler/`) say each one's phase, iteration, what it waits
for and why it ended; a damaged one is named with its file and what to do. Actors, mailboxes
and context fill exist only in a running process, so they are not shown.
"""

from __future__ import annotations

import json
from pathlib import Path

from baton.pipeline.scenario import ScenarioStore
from baton.server._render import render_scenario


async def offline_status(workspace: Path, *, as_json: bool = False) -> str:
    """The status of `workspace` read from its files, no process answering there."""
    store = ScenarioStore(workspace)
    records = await store.load_all()
    states = [record.state() for _, record in sorted(records.items())]
    damaged = {name: str(error) for name, error in sorted(store.damaged.items())}
    if as_json:
        body = {
            "running": False,
            "workspace": str(workspace),
            "scenarios": [state.model_dump(mode="json") for state in states],
            "damaged_scenarios": damaged,
        }
        return json.dumps(body, indent=2, ensure_ascii=False)
    lines = ["baton is not running here; the workspace's files say:", "scenarios:"]
    lines += [f"  {render_scenario(state)}" for state in states] or ["  none"]
    for name, error in damaged.items():
        lines.append(f"  damaged record: {name}: {error}")
    return "\n".join(lines)
