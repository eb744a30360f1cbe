"""A strip batch that takes the context back under the threshold stands in for a summary:
none is asked for in the background, and none is paid for and left unused."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from baton import Runtime
from baton.agents.agent_config import AgentConfig
from baton.agents.compaction import (
    ASK_LOOKAHEAD,
    MAX_ASK_LOOKAHEAD,
    SUMMARY_TURNS_PRIOR,
    CallPace,
)
from baton.agents.journal import FileJournalStore
from baton.agents.messages import Prompt
from baton.models.scripted import Script, ScriptedModel
from baton.pipeline.roles import InitActor, agent_setup
from baton.testing import capture_token_log

PARTS = [f"part_{n}.txt" for n in range(8)]


def write_parts(workspace: Path, lines: int) -> None:
    for n, path in enumerate(PARTS):
        text = "\n".join(f"part {n} line {i}: {'leave rule ' * 8}" for i in range(lines))
        (workspace / path).write_text(text)


async def summaries(workspace: Path, **budget: Any) -> tuple[int, int]:
    """Summaries asked for and compactions applied while Init reads every part once."""
    turns: list[Any] = [
        *({"tool_use": {"name": "Read", "input": {"path": path}}} for path in PARTS),
        "All parts read.",
    ]
    model = ScriptedModel(Script.model_validate({"actors": {"init": turns}}))
    settings: dict[str, Any] = {
        "model": "claude-opus-4-5",
        "context_window": 60_000,
        "compact_threshold": 12_000,
        "keep_recent_steps": 2,
        "precompact_at": 0.5,
        "stride": 4,
        "strip_batch_tokens": 2_000,
    }
    async with Runtime.open(workspace) as rt:
        setup = agent_setup(
            "init",
            AgentConfig.model_validate({**settings, **budget}),
            workspace=workspace,
            model=model,
            journal=FileJournalStore(workspace),
            token_log=rt.token_log,
        )
        await rt.spawn("init", InitActor, setup)
        with capture_token_log() as lines:
            assert "All parts read." == await rt.ask("init", Prompt(text="read the parts"))
    asked = sum(1 for c in model.calls if c.context.purpose == "compaction")
    applied = sum(1 for line in lines if line["event"] == "context.compacted")
    return asked, applied


async def test_no_summary_is_asked_for_when_a_due_strip_batch_brings_the_context_back(
    tmp_path: Path,
) -> None:
    """Each read passes the ask point, and each is stripped as it ages out of the newest
    two, taking the context back under it: no summary is asked for, none is left unused."""
    write_parts(tmp_path, lines=70)
    assert (0, 0) == await summaries(tmp_path)


async def test_a_summary_is_still_asked_for_when_the_strip_batch_falls_short(
    tmp_path: Path,
) -> None:
    """With reads so large that the newest two alone pass the threshold, stripping cannot
    help: the summary is asked for, and used."""
    write_parts(tmp_path, lines=180)
    asked, applied = await summaries(tmp_path)
    assert 0 < applied
    assert asked == applied


def test_the_look_ahead_reaches_as_far_as_a_summary_takes() -> None:
    """A strip batch may stand in for a summary as many steps ahead as the summary takes
    turns to write: 2 before any call is timed, the prior once turns are, the measured
    ratio once a summary is, never past the cap."""
    pace = CallPace()
    assert ASK_LOOKAHEAD == pace.lookahead()
    pace.timed("turn", 1.0)
    assert math.ceil(SUMMARY_TURNS_PRIOR) == pace.lookahead()
    pace.timed("compaction", 5.5)
    assert 6 == pace.lookahead()
    pace.timed("compaction", 60.0)
    assert MAX_ASK_LOOKAHEAD == pace.lookahead()
    fast = CallPace()
    fast.timed("turn", 2.0)
    fast.timed("compaction", 1.0)
    assert ASK_LOOKAHEAD == fast.lookahead()
