"""`baton run` with Execute on `strategy = "server"` and `tool_result_clearing = "server"`,
thinking on, against the Messages API stand-in through the real SDK: the server clears and
compacts, the process is SIGKILLed once the compaction is journaled, and the restarted run
completes the scenario from the block without paying for the compaction again."""

from __future__ import annotations

import json
import signal
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

from baton.pipeline.offline_model import OfflineModel
from baton.testing import MessagesAPIStandIn, read_token_log
from tests.e2e.test_record_replay import BATON, DEADLINE, clean_env, finish
from tests.pipeline.test_scheduler import BASE, NAME, design_turns, iteration_turns, make_scenario

# Lines of each input (about 46 tokens each): three reads of ~20K tokens, so the server
# clears the oldest once a third arrives; then one of ~30K, so the newest two pass the
# threshold and the server compacts; then small ones.
LINES = [430, 430, 430, 650, 100, 100]
PARTS = [f"{BASE}/inputs/part_{n}.txt" for n in range(len(LINES))]
BATON_TOML = """\
[actors.execute]
strategy = "server"
tool_result_clearing = "server"
compact_threshold = 50000
keep_recent_steps = 2
strip_batch_tokens = 20000
load_budget_tokens = 500000
"""


def read(path: str) -> dict[str, Any]:
    return {"content": [{"type": "tool_use", "name": "Read", "input": {"path": path}}]}


def scenario(workspace: Path) -> None:
    """The mini scenario; Execute reads six large inputs before its iteration's report."""
    execute = [*(read(path) for path in PARTS), *iteration_turns(1, 3, complete=True)]
    make_scenario(workspace, init=design_turns(1), execute=execute, auto_approve=True)
    for n, (path, lines) in enumerate(zip(PARTS, LINES, strict=True)):
        target = workspace / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            "\n".join(f"part {n} rule {i}: {'请假 leave ' * 12}" for i in range(lines))
        )
    (workspace / "baton.toml").write_text(BATON_TOML)


RUN_ARGS = ["run", "--submit", NAME, "--exit-when-idle"]


def start(workspace: Path, env: dict[str, str], *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [BATON, *RUN_ARGS, *extra, "--workspace", str(workspace)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def lines_of(workspace: Path, event: str) -> list[dict[str, Any]]:
    path = workspace / ".baton" / "logs" / "tokens.jsonl"
    if not path.is_file():
        return []
    return [r for r in read_token_log(workspace, skip_torn=True) if r.get("event") == event]


async def test_server_compaction_and_clearing_survive_a_kill(tmp_path: Path) -> None:
    """Killed right after Execute's first server compaction is journaled, the run restarted
    completes: one pause per compaction, every later request opens with its block, the
    server's clearing reported, every request valid (thinking on) and the scenario done."""
    script = tmp_path / "script"
    scenario(script)
    workspace = tmp_path / "run"
    scenario(workspace)
    async with MessagesAPIStandIn(model=OfflineModel(script)) as api:
        env = clean_env(api.env())
        process = start(workspace, env)
        try:
            with anyio.fail_after(DEADLINE):
                while not lines_of(workspace, "context.compacted"):  # noqa: ASYNC110
                    await anyio.sleep(0.02)  # polled under the deadline above
            process.send_signal(signal.SIGKILL)
        finally:
            process.kill()
            await anyio.to_thread.run_sync(process.communicate)
        assert -signal.SIGKILL == process.returncode  # killed mid-run, not finished
        code, _, err = await finish(start(workspace, env))
        requests = [r for r in api.requests_to("messages") if isinstance(r.body, dict)]
    assert 0 == code, err[-3000:]
    assert {200} == {r.status for r in requests}
    state = json.loads((workspace / ".baton" / "scheduler" / f"{NAME}.json").read_text())
    assert "completed" == state["phase"]
    compacted = [c for c in lines_of(workspace, "context.compacted") if c["actor"] == "execute"]
    assert compacted
    assert {"server"} == {c["by"] for c in compacted}
    pauses = Counter(
        (c["conversation"], c["turn"])
        for c in lines_of(workspace, "model.call")
        if c["stop_reason"] == "compaction"
    )
    assert pauses
    assert {1} == set(pauses.values())  # never paid for twice
    execute = [r for r in requests if r.headers.get("x-baton-actor") == "execute"]
    assert all(r.body.get("thinking") == {"type": "adaptive"} for r in execute)
    carries = [_carries_block(r) for r in execute]
    first = carries.index(True)  # the block stays from the first request that sends it on
    assert all(carries[first:])
    assert all("compact-2026-01-12" in r.headers.get("anthropic-beta", "") for r in execute)
    edits = [
        edit
        for c in lines_of(workspace, "model.call")
        for edit in c.get("applied_edits") or ()
        if edit["type"] == "clear_tool_uses_20250919"
    ]
    assert edits


def _carries_block(request: Any) -> bool:
    return any(
        isinstance(block, dict) and block.get("type") == "compaction"
        for message in request.body["messages"]
        for block in (message["content"] if isinstance(message["content"], list) else ())
    )


def bare(workspace: Path) -> None:
    """The scenario's inputs and settings as a user has them: no script."""
    scenario(workspace)
    folder = workspace / BASE
    (folder / "script.json").unlink()
    (folder / "scenario.toml").write_text(
        'requirement = "请假申请"\nauto_approve = true\n[policy]\nmax_iterations = 3\n'
    )


async def test_a_run_with_server_compaction_replays_offline_from_its_recording(
    tmp_path: Path,
) -> None:
    """Recorded against the stand-in, the run replays with no key and no base URL: the same
    calls (the server's compaction pauses among them), the same handoffs, the block applied
    again from the recording."""
    script = tmp_path / "script"
    scenario(script)
    recorded = tmp_path / "recorded"
    bare(recorded)
    async with MessagesAPIStandIn(model=OfflineModel(script)) as api:
        code, _, err = await finish(start(recorded, clean_env(api.env()), "--record"))
    assert 0 == code, err[-2000:]
    replay = tmp_path / "replay"
    bare(replay)
    recording = recorded / BASE / "recording.jsonl"
    (replay / BASE / "recording.jsonl").write_bytes(recording.read_bytes())
    code, out, err = await finish(start(replay, clean_env()))
    assert 0 == code, err[-2000:]
    assert any(line.startswith(f"ended {NAME}: completed") for line in out.splitlines())

    def calls(workspace: Path) -> list[tuple[str, int, str, str | None]]:
        return [
            (c["actor"], c["turn"], c["purpose"], c["stop_reason"])
            for c in lines_of(workspace, "model.call")
            if c["actor"] == "execute"
        ]

    assert calls(recorded) == calls(replay)
    assert any(stop == "compaction" for *_, stop in calls(replay))
    compacted = [c for c in lines_of(replay, "context.compacted") if c["actor"] == "execute"]
    assert {"server"} == {c["by"] for c in compacted}
