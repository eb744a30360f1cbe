"""An agent with `strategy = "server"` (and server clearing) offline: the server's compaction
pause is journaled, audited and logged once, the work goes on from the block, the facts the
block lacks are carried, and a resumed agent sends the same block without paying again; a
resumed round also keeps the load budget it had used."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from baton import Runtime
from baton.agents.agent_config import AgentConfig
from baton.agents.journal import FileJournalStore, decode_line
from baton.agents.messages import Prompt
from baton.models.scripted import Script, ScriptedModel
from baton.pipeline.roles import InitActor, agent_setup
from baton.testing import capture_token_log

PARTS = [f"part_{n}.txt" for n in range(8)]
TICKET = "LEAVE-20931"


def write_parts(workspace: Path) -> None:
    for n, path in enumerate(PARTS):
        text = "\n".join(f"part {n} line {i}: {'leave rule ' * 8}" for i in range(420))
        (workspace / path).write_text(text)


def script() -> Script:
    turns: list[Any] = [
        *({"tool_use": {"name": "Read", "input": {"path": path}}} for path in PARTS),
        "All parts read.",
        "Nothing else.",
    ]
    return Script.model_validate({"actors": {"init": turns}})


SETTINGS: dict[str, Any] = {
    "model": "claude-opus-5-5",
    "context_window": 200_000,
    "compact_threshold": 50_000,
    "keep_recent_steps": 2,
    "strategy": "server",
    "thinking": "adaptive",
    "stride": 50,  # every step whole: the server's compaction is what takes the context back
}


async def spawn(rt: Runtime, workspace: Path, model: ScriptedModel, **settings: Any) -> None:
    setup = agent_setup(
        "init",
        AgentConfig.model_validate({**SETTINGS, **settings}),
        workspace=workspace,
        model=model,
        journal=FileJournalStore(workspace),
        token_log=rt.token_log,
    )
    await rt.spawn("init", InitActor, setup)


async def run(workspace: Path, model: ScriptedModel, **settings: Any) -> list[dict[str, Any]]:
    async with Runtime.open(workspace) as rt:
        await spawn(rt, workspace, model, **settings)
        with capture_token_log() as lines:
            text = f"read the parts for ticket {TICKET}"
            assert "All parts read." == await rt.ask("init", Prompt(text=text), timeout=60)
    return lines


def cut_journal(workspace: Path, record: bytes, nth: int = 0) -> dict[str, Any]:
    """Leave the journal as a kill right after its `nth` record of type `record` would; that
    record."""
    (path,) = (workspace / ".baton" / "journal" / "init").glob("*.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    cut = [i for i, line in enumerate(lines) if b'"type":"' + record + b'"' in line][nth]
    path.write_bytes(b"".join(lines[: cut + 1]))
    decoded = decode_line(lines[cut])
    assert decoded is not None
    return decoded


async def resume(workspace: Path, model: ScriptedModel, **settings: Any) -> list[dict[str, Any]]:
    """A new process over the cut journal: the interrupted round finishes first, then the
    next prompt's."""
    async with Runtime.open(workspace) as rt:
        await spawn(rt, workspace, model, **settings)
        with capture_token_log() as lines:
            assert "Nothing else." == await rt.ask("init", Prompt(text="anything else?"))
    return lines


def journal_records(workspace: Path) -> list[dict[str, Any]]:
    (path,) = (workspace / ".baton" / "journal" / "init").glob("*.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    return [record for line in lines if (record := decode_line(line)) is not None]


async def test_the_server_compacts_once_and_the_round_goes_on_from_its_block(
    tmp_path: Path,
) -> None:
    """Past the threshold one pause comes back: journaled with its block, logged as a
    compaction call and a `context.compacted` line by the server, audited; every request
    after it opens with the block; the script is answered turn by turn to its end."""
    write_parts(tmp_path)
    model = ScriptedModel(script())
    lines = await run(tmp_path, model)
    compacted = [line for line in lines if line["event"] == "context.compacted"]
    assert 1 <= len(compacted)
    assert {"server"} == {line["by"] for line in compacted}
    assert all(line["server_output_tokens"] > 0 for line in compacted)
    paused = [
        line
        for line in lines
        if line["event"] == "model.call" and line["stop_reason"] == "compaction"
    ]
    assert len(compacted) == len(paused)
    assert {"compaction"} == {line["purpose"] for line in paused}
    assert all(line["compaction_input_tokens"] > 0 for line in paused)
    records = [r for r in journal_records(tmp_path) if r.get("type") == "compaction"]
    assert len(compacted) == len(records)
    assert all(r["by"] == "server" and r["block"]["type"] == "compaction" for r in records)
    audit = json.loads((tmp_path / compacted[0]["audit"]).read_text())
    assert ("server", records[0]["block"]["content"]) == (audit["by"], audit["summary"])
    # Every request sent after the first compaction carries its block.
    first = next(i for i, c in enumerate(model.calls) if c.response.stop_reason == "compaction")
    for call in list(model.calls)[first + 1 :]:
        blocks = [b for m in call.payload["messages"] for b in m["content"] if isinstance(b, dict)]
        assert any(b["type"] == "compaction" for b in blocks)
    # Baton asked for no summary of its own: every compaction call was the server's pause.
    own = [
        c
        for c in model.calls
        if c.context.purpose == "compaction" and c.response.stop_reason != "compaction"
    ]
    assert [] == own


async def test_the_ticket_the_block_lacks_is_carried_beside_it(tmp_path: Path) -> None:
    """The round's ticket id (found in its text, a key fact) is shown after the block when
    the server's summary does not spell it out."""
    write_parts(tmp_path)
    model = ScriptedModel(script())
    lines = await run(tmp_path, model, fact_patterns=[r"LEAVE-\d+"])
    compacted = [line for line in lines if line["event"] == "context.compacted"]
    records = [r for r in journal_records(tmp_path) if r.get("type") == "compaction"]
    first = next(i for i, c in enumerate(model.calls) if c.response.stop_reason == "compaction")
    after = json.dumps(model.calls[first + 1].payload["messages"])
    assert TICKET in after
    if TICKET in (records[0]["block"]["content"] or ""):
        assert 0 == compacted[0]["facts_carried"]
    else:
        assert 1 <= compacted[0]["facts_carried"]
        assert "<key_facts>" in after


async def test_an_agent_stopped_after_the_compaction_resumes_from_its_block(
    tmp_path: Path,
) -> None:
    """A process stopped right after the compaction was journaled: the next one finishes the
    round from the journal, its first request opening with the same block, and asks the
    server for no compaction again."""
    write_parts(tmp_path)
    await run(tmp_path, ScriptedModel(script()))
    block = cut_journal(tmp_path, b"compaction")
    again = ScriptedModel(script())
    logged = await resume(tmp_path, again)
    first = next(iter(again.calls))
    # The turn the pause interrupted, asked again from the block: not compacted again.
    assert (block["first_kept_seq"] + 2, "tool_use") == (
        first.context.turn,
        first.response.stop_reason,
    )
    messages = first.payload["messages"]
    sent = {k: v for k, v in messages[1]["content"][0].items() if k != "cache_control"}
    assert block["block"] == sent
    numbers = [line["audit"] for line in logged if line["event"] == "context.compacted"]
    assert ".baton/compactions/init/main/1.json" not in numbers


async def test_server_clearing_with_server_compaction_reports_what_was_cleared(
    tmp_path: Path,
) -> None:
    """With both edits the server clears the older reads (`applied_edits` in the call's
    line) and the calls keep every step whole on the client side."""
    write_parts(tmp_path)
    model = ScriptedModel(script())
    lines = await run(
        tmp_path, model, tool_result_clearing="server", strip_batch_tokens=12_000, stride=4
    )
    cleared = [
        edit
        for line in lines
        if line["event"] == "model.call"
        for edit in line.get("applied_edits") or ()
        if edit["type"] == "clear_tool_uses_20250919"
    ]
    assert cleared
    assert all(edit["cleared_input_tokens"] >= 12_000 for edit in cleared)


async def test_a_resumed_round_keeps_the_load_budget_it_had_used(tmp_path: Path) -> None:
    """The round's reads are counted again from the journal: cut after the fourth read, the
    resumed round refuses the reads past the budget as the live one did."""
    write_parts(tmp_path)
    budget = {"load_budget_tokens": 40_000, "strategy": "summarize", "compact_threshold": 150_000}
    live = ScriptedModel(script())
    await run(tmp_path, live, **budget)
    cut_journal(tmp_path, b"step", 3)  # a kill after the fourth read
    again = ScriptedModel(script())
    await resume(tmp_path, again, **budget)

    def refused(model: ScriptedModel) -> list[int]:
        return [
            call.context.turn
            for call in model.calls
            if "load budget used up" in json.dumps(call.payload["messages"][-1])
        ]

    assert refused(live)
    assert refused(live)[0] == refused(again)[0]
