"""`baton run` on the current models, against the current API's stand-in: a retired default
stops it at start, a deprecated model warns, and a thinking tool loop killed with SIGKILL in
the middle resumes with every request accepted."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio

from baton.agents.journal import decode_line
from baton.testing import DEFAULT_MODELS, MessagesAPIStandIn, StandInModel
from tests.tool_loop import FINAL_ANSWER, ToolLoop, continuations

BATON = str(Path(sys.executable).parent / "baton")
ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 30.0
PARTS = [f"docs/part_{n}.md" for n in range(4)]


def online_env(api: MessagesAPIStandIn) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "BATON_"))}
    return {**clean, **api.env()}


def baton(api: MessagesAPIStandIn, workspace: Path, *args: str) -> subprocess.Popen[str]:
    """A `baton` command talking to the stand-in (which this test's event loop serves): wait
    for it with `finish`, off the loop."""
    return subprocess.Popen(
        [BATON, *args, "--workspace", str(workspace)],
        env=online_env(api),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    """Wait for the process off the event loop (the stand-in must keep answering)."""
    out, err = await anyio.to_thread.run_sync(lambda: process.communicate(timeout=DEADLINE))
    return process.returncode, out, err


async def banner(process: subprocess.Popen[str]) -> str:
    """The banner, once the line saying what the start checks online has come first."""
    assert process.stdout is not None
    checking: str = await anyio.to_thread.run_sync(process.stdout.readline)
    assert checking.startswith("baton: checking the agents' models with the Models API"), checking
    line: str = await anyio.to_thread.run_sync(process.stdout.readline)
    assert line.startswith("baton: Claude"), line
    return line


def scenario_workspace(tmp_path: Path) -> Path:
    shutil.copytree(
        ROOT / "scenarios" / "leave_application", tmp_path / "scenarios" / "leave_application"
    )
    return tmp_path


def with_model(**rows: dict[str, Any]) -> dict[str, StandInModel]:
    models = dict(DEFAULT_MODELS)
    for model_id, update in rows.items():
        models[model_id] = models[model_id].model_copy(update=update)
    return models


async def test_a_retired_default_model_stops_baton_run_with_one_line(tmp_path: Path) -> None:
    """Sonnet 5.5 retired (Execute's default): `baton run --submit` exits 1 before the banner
    and before any call, with one line naming the actor, the model and what to set."""
    workspace = scenario_workspace(tmp_path)
    models = with_model(**{"claude-sonnet-5-5": {"lifecycle": "retired"}})
    async with MessagesAPIStandIn(models=models) as api:
        run = baton(api, workspace, "run", "--submit", "leave_application", "--exit-when-idle")
        code, out, err = await finish(run)
        messages = api.requests_to("messages")
    errors = [line for line in err.splitlines() if line.startswith("baton run: error:")]
    assert 1 == code
    # What it checks, then no banner, nothing submitted.
    assert [f"baton: checking the agents' models with the Models API at {api.base_url}…"] == (
        out.splitlines()
    )
    assert [
        "baton run: error: actor 'execute': model 'claude-sonnet-5-5' is retired; "
        'set [actors.execute] model = "claude-sonnet-5" in baton.toml'
    ] == errors
    assert [] == messages


async def test_a_deprecated_model_is_a_warning_line_at_start(tmp_path: Path) -> None:
    """Execute on Sonnet 4.5: `baton run` starts, and says on stderr when it retires and what
    to move to."""
    (tmp_path / "baton.toml").write_text(
        '[actors.execute]\nmodel = "claude-sonnet-4-5"\nthinking = "off"\n'
    )
    async with MessagesAPIStandIn() as api:
        run = baton(api, tmp_path, "run")
        await banner(run)
        run.send_signal(signal.SIGTERM)
        code, _, err = await finish(run)
    assert 0 == code
    assert (
        "baton: warning: actor 'execute': model 'claude-sonnet-4-5' is deprecated and retires "
        'on 2026-11-30; set [actors.execute] model = "claude-sonnet-5-5" in baton.toml'
    ) in err.splitlines()


def journal_steps(workspace: Path) -> list[dict[str, Any]]:
    path = workspace / ".baton" / "journal" / "init" / "main.jsonl"
    records = [decode_line(line) for line in path.read_bytes().splitlines(keepends=True)]
    return [r["step"] for r in records if r is not None and r.get("type") == "step"]


async def test_a_thinking_loop_killed_mid_way_resumes_and_no_request_is_refused(
    tmp_path: Path,
) -> None:
    """Init (Opus 5.5, thinking) runs a 22-step Read loop; SIGKILL lands after its first
    compaction, in the middle of the loop; the restarted `baton run` resumes the round from
    the journal and finishes it. Every request of both processes is accepted by the stand-in
    (which checks the thinking blocks' signatures, prefixes and the tool-loop rule)."""
    for n, path in enumerate(PARTS):
        file = tmp_path / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text("\n".join(f"part {n} line {i}: {'leave rule ' * 8}" for i in range(80)))
    (tmp_path / "baton.toml").write_text(
        "[actors.init]\ncompact_threshold = 20000\nkeep_recent_steps = 3\n"
        "load_budget_tokens = 1000000\n"
    )
    loop = ToolLoop(steps=22, paths=PARTS)
    async with MessagesAPIStandIn(policy=loop, redacted_thinking_every=4) as api:
        first = baton(api, tmp_path, "run")
        await banner(first)
        tell = baton(
            api, tmp_path, "tell", "init", "Prompt", '{"text": "Read the four parts, in turn."}'
        )
        assert 0 == (await finish(tell))[0]
        await api.wait_until(lambda: loop.summaries >= 1 and loop.turns >= 10, DEADLINE)
        first.send_signal(signal.SIGKILL)
        await finish(first)
        killed_at = len(api.requests_to("messages"))
        assert not loop.finished  # the kill landed inside the loop
        second = baton(api, tmp_path, "run")
        await banner(second)
        await api.wait_until(lambda: loop.finished, DEADLINE)
        stop = baton(api, tmp_path, "stop")
        assert 0 == (await finish(stop))[0]
        assert 0 == (await finish(second))[0]
        requests = api.requests_to("messages")
    assert {200} == {r.status for r in requests}
    after_restart = continuations(requests[killed_at:])
    assert after_restart
    assert all(content[0]["type"] == "thinking" for content in after_restart)
    assert 2 <= loop.summaries
    steps = journal_steps(tmp_path)
    last = steps[-1]
    assert ("end_turn", FINAL_ANSWER) == (
        last["stop_reason"],
        "".join(b["text"] for b in last["content"] if b["type"] == "text"),
    )
    assert all(b["type"] != "thinking" or b["signature"] for s in steps for b in s["content"])
