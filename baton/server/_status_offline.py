"""`baton status` with no process running: what the Scheduler's records say, and that nothing
runs (README.md, "Running baton").

The scenarios' records say each one's phase, iteration, what it waits for and why it ended;
a damaged one is named with where it is and what to do. They are read where the Scheduler
keeps them: the workspace's files (`.baton/scheduler/`), or, when `baton.toml` (or
`BATON_RUNTIME__MAILBOX`) names a Redis mailbox, Redis (README.md, "Scaling out"). Actors,
mailboxes and context fill exist only in a running process, so they are not shown.
"""

from __future__ import annotations

import json
from contextlib import AbstractAsyncContextManager, nullcontext
from pathlib import Path

from baton.errors import ConfigError
from baton.pipeline.scenario_store import FileScenarioStore, ScenarioStore
from baton.runtime.settings import is_redis_url, load_settings, redact_url
from baton.server._render import render_scenario


def _records(workspace: Path) -> tuple[AbstractAsyncContextManager[ScenarioStore], str]:
    """The store `baton run` keeps the workspace's records in, and who says what they hold."""
    try:
        runtime = load_settings(Path(workspace)).runtime  # the command line gives a str
    except ConfigError:
        # A `baton.toml` that does not load cannot have started a Redis deployment either.
        return nullcontext(FileScenarioStore(workspace)), "the workspace's files say"
    if not is_redis_url(runtime.mailbox):
        return nullcontext(FileScenarioStore(workspace)), "the workspace's files say"
    # Imported here: a workspace on files does not load redis-py.
    from baton.pipeline.redis_scenario_store import redis_records  # noqa: PLC0415

    where = f"Redis at {redact_url(runtime.mailbox)} says"
    return redis_records(runtime.mailbox, prefix=runtime.redis.prefix), where


async def offline_status(workspace: Path, *, as_json: bool = False) -> str:
    """The status of `workspace` read from its records, no process answering there."""
    opened, where = _records(workspace)
    async with opened as store:
        records = await store.load_all()
    states = [record.state() for _, record in sorted(records.items())]
    damaged = {name: str(error) for name, error in sorted(store.damaged.items())}
    if as_json:
        body = {
            "running": False,
            "workspace": str(workspace),
            "records": where.rsplit(" ", 1)[0],
            "scenarios": [state.model_dump(mode="json") for state in states],
            "damaged_scenarios": damaged,
        }
        return json.dumps(body, indent=2, ensure_ascii=False)
    lines = [f"baton is not running here; {where}:", "scenarios:"]
    lines += [f"  {render_scenario(state)}" for state in states] or ["  none"]
    for name, error in damaged.items():
        lines.append(f"  damaged record: {name}: {error}")
    return "\n".join(lines)
