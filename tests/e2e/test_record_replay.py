"""`baton run --record` against the Messages API stand-in (the real SDK, thinking models),
then the same scenario replayed offline from its recording: same artifacts, same handoffs;
a replay that diverges ends the scenario with one line; an offline submit that nothing can
answer is refused at once (docs/recordings.md)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from baton.models.recording import RECORDING_FILE as RECORDING
from baton.models.recording import Recording
from baton.pipeline.offline_model import OfflineModel
from baton.testing import MessagesAPIStandIn, read_token_log
from tests.pipeline.test_scheduler import NAME, design_turns, iteration_turns, make_scenario

BATON = str(Path(sys.executable).parent / "baton")
DEADLINE = 25.0
RUN = ["run", "--submit", NAME, "--auto-approve", "--exit-when-idle"]
SCENARIO_TOML = 'requirement = "请假申请"\n[policy]\nmax_iterations = 3\n'


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without any key or base URL (offline), plus `extra`."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "BATON_"))}
    return {**clean, **(extra or {})}


def start(workspace: Path, args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [BATON, *args, "--workspace", str(workspace)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    """Wait off the event loop (the stand-in this loop serves must keep answering)."""
    out, err = await anyio.to_thread.run_sync(lambda: process.communicate(timeout=DEADLINE))
    return process.returncode, out, err


def bare_scenario(workspace: Path) -> Path:
    """The scenario as a user writes it: scenario.toml only (no script, no recording)."""
    folder = workspace / "scenarios" / NAME
    folder.mkdir(parents=True)
    (folder / "scenario.toml").write_text(SCENARIO_TOML, encoding="utf-8")
    return folder


async def record(tmp_path: Path) -> tuple[Path, str]:
    """Run the scenario with `--record` on the default (thinking) models; the stand-in plays
    a script that makes Init design and hand off and Execute report a passing iteration."""
    script_ws = tmp_path / "script"
    make_scenario(script_ws, init=design_turns(1), execute=iteration_turns(1, 3, complete=True))
    workspace = tmp_path / "recorded"
    bare_scenario(workspace)
    async with MessagesAPIStandIn(model=OfflineModel(script_ws)) as api:
        code, out, err = await finish(start(workspace, [*RUN, "--record"], clean_env(api.env())))
        statuses = {r.status for r in api.requests_to("messages")}
    assert (0, {200}) == (code, statuses), err[-2000:]
    return workspace, out


def artifacts(workspace: Path) -> dict[str, bytes]:
    """Every file the run wrote in the scenario's folder (its inputs and recording left out)."""
    folder = workspace / "scenarios" / NAME
    kept = {"scenario.toml", "recording.jsonl"}
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name not in kept
    }


def replay_workspace(recorded: Path, target: Path) -> Path:
    """A fresh workspace holding only the scenario's inputs and its recording."""
    folder = bare_scenario(target)
    shutil.copy(recorded / "scenarios" / NAME / "recording.jsonl", folder)
    return target


def handoffs(workspace: Path) -> list[tuple[str, str]]:
    return [
        (e["from"], e["handoff_type"])
        for e in read_token_log(workspace)
        if e["event"] == "handoff.sent"
    ]


def calls(workspace: Path) -> dict[str, list[tuple[int, str]]]:
    """Each actor's model calls in order (actors interleave by timing)."""
    by_actor: dict[str, list[tuple[int, str]]] = {}
    for e in read_token_log(workspace):
        if e["event"] == "model.call":
            by_actor.setdefault(e["actor"], []).append((e["turn"], e["purpose"]))
    return by_actor


def ended_line(out: str) -> str:
    """The run's outcome: the `ended NAME: ...` line of `--exit-when-idle`."""
    return next(line for line in out.splitlines() if line.startswith(f"ended {NAME}:"))


def recorded_lines(workspace: Path) -> list[dict[str, Any]]:
    path = workspace / "scenarios" / NAME / "recording.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def test_a_recorded_run_replays_offline_to_the_same_artifacts(tmp_path: Path) -> None:
    """The recorded run completes and says where it records; replayed with no key and no
    base URL, the scenario completes with the same files byte for byte, the same handoffs
    and the same calls, and the banner says it replays."""
    recorded, out = await record(tmp_path)
    lines = recorded_lines(recorded)
    assert f"baton: recording: model replies are appended to scenarios/{NAME}/recording.jsonl" in (
        out.splitlines()
    )
    assert {"init", "execute", "scheduler"} == {line["actor"] for line in lines}
    assert any(b["type"] == "thinking" for line in lines for b in line["response"]["content"])
    replay = replay_workspace(recorded, tmp_path / "replay")
    code, replay_out, err = await finish(start(replay, RUN, clean_env()))
    assert 0 == code, err[-2000:]
    assert (
        f"baton: offline: replaying scenarios/{NAME}/recording.jsonl"
        == (replay_out.splitlines()[1])
    )
    assert ended_line(replay_out).startswith(f"ended {NAME}: completed")
    assert artifacts(recorded) == artifacts(replay)
    assert len(artifacts(replay)) >= 8
    assert handoffs(recorded) == handoffs(replay)
    assert [
        ("init", "init_to_execute"),
        ("scheduler", "init_to_execute"),
        ("execute", "scenario_complete"),
    ] == handoffs(replay)
    assert calls(recorded) == calls(replay)
    assert {"offline-replay"} == {
        e["model"] for e in read_token_log(replay) if e["event"] == "model.call"
    }


@pytest.mark.parametrize(("actor", "purpose"), [("execute", "turn"), ("scheduler", "task_summary")])
async def test_a_replay_without_a_reply_ends_the_scenario_with_one_line(
    tmp_path: Path, actor: str, purpose: str
) -> None:
    """Execute's turn 1 (or the Scheduler's second task summary) taken out of the recording:
    the replay neither hangs nor crashes; the scenario ends failed naming the actor,
    conversation and turn and how to re-record."""
    recorded, _ = await record(tmp_path)
    replay = replay_workspace(recorded, tmp_path / "replay")
    path = replay / "scenarios" / NAME / "recording.jsonl"
    kept = [
        line
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True)
        if (json.loads(line)["actor"], json.loads(line)["turn"]) != (actor, 1)
    ]
    path.write_text("".join(kept), encoding="utf-8")
    code, out, err = await finish(start(replay, RUN, clean_env()))
    ended = ended_line(out)
    assert 1 == code, err[-2000:]  # a failed scenario: `--exit-when-idle` exits 1
    assert ended.startswith(f"ended {NAME}: failed"), ended
    assert f"baton run: error: 1 scenario(s) did not complete: {NAME} (failed)" in err
    assert (
        f"replay diverged: {path.relative_to(replay)} has no reply for actor '{actor}', "
        f"conversation '{NAME}', turn 1 ({purpose}) — re-record it with ANTHROPIC_API_KEY set: "
        f"`baton run --record --submit {NAME}`"
    ) in ended


async def test_an_offline_submit_with_no_recording_or_script_is_refused(tmp_path: Path) -> None:
    """No key, scenario.toml only: `baton run --submit` exits 1 and `baton submit` to a
    running `baton run` fails with the same one line; no model is called."""
    bare_scenario(tmp_path)
    code, _, err = await finish(start(tmp_path, RUN, clean_env()))
    refusal = (
        f"scenario '{NAME}' has no model to run on: set ANTHROPIC_API_KEY, or record a run "
        f"with `baton run --record --submit {NAME}` (it has neither recording.jsonl nor an "
        "offline_script)"
    )
    assert (1, [f"baton run: error: {refusal}"]) == (code, err.splitlines()[-1:])
    server = start(tmp_path, ["run"], clean_env())
    assert server.stdout is not None
    banner = await anyio.to_thread.run_sync(server.stdout.readline)
    assert banner.startswith("baton: offline scripted model"), banner
    submitted = await finish(start(tmp_path, ["submit", NAME], clean_env()))
    server.send_signal(signal.SIGTERM)
    await finish(server)
    assert (1, "", f"baton submit: error: {refusal}\n") == submitted
    assert [] == [e for e in read_token_log(tmp_path) if e["event"] == "model.call"]


async def test_a_recording_killed_mid_run_and_resumed_replays_the_resumed_run(
    tmp_path: Path,
) -> None:
    """`baton run --record` SIGKILLed after Execute's first reply, then restarted with
    `--record`: the resumed run completes, the recording keeps one reply per key (the
    latest), and the replay writes the resumed run's files and handoffs."""
    script_ws = tmp_path / "script"
    make_scenario(script_ws, init=design_turns(1), execute=iteration_turns(1, 3, complete=True))
    recorded = tmp_path / "recorded"
    bare_scenario(recorded)
    async with MessagesAPIStandIn(model=OfflineModel(script_ws)) as api:

        def execute_answered() -> bool:
            return any(
                r.headers.get("x-baton-actor") == "execute" and r.status == 200
                for r in api.requests_to("messages")
            )

        first = start(recorded, [*RUN, "--record"], clean_env(api.env()))
        await api.wait_until(execute_answered, DEADLINE)
        first.send_signal(signal.SIGKILL)
        killed = (await finish(first))[0]
        killed_at = len(api.requests_to("messages"))
        resumed = start(recorded, ["run", "--record", "--exit-when-idle"], clean_env(api.env()))
        code, out, err = await finish(resumed)
        resumed_calls = len(api.requests_to("messages")) - killed_at
    assert (-signal.SIGKILL, 0) == (killed, code), err[-2000:]
    assert resumed_calls > 0  # the kill landed before the end: the resumed run called on
    assert ended_line(out).startswith(f"ended {NAME}: completed")
    recording = Recording.load(recorded / "scenarios" / NAME / RECORDING)
    assert {"init", "execute", "scheduler"} == {key.actor for key in recording.replies}
    replay = replay_workspace(recorded, tmp_path / "replay")
    code, replay_out, err = await finish(start(replay, RUN, clean_env()))
    assert 0 == code, err[-2000:]
    assert ended_line(replay_out).startswith(f"ended {NAME}: completed")
    assert artifacts(recorded) == artifacts(replay)
    assert handoffs(recorded) == handoffs(replay)
