"""README.md, "Your own scenario", as processes: `baton new`, then `baton run --record
--submit` on the real SDK against the Messages API stand-in reaches Init with the scenario's
own prompt, and the recording replays offline with no key."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio

from baton.testing import MessagesAPIStandIn
from tests.e2e.test_record_replay import BATON, DEADLINE, clean_env, finish, start

NAME = "my_task"
RUN = ["run", "--submit", NAME, "--exit-when-idle"]
MARKER = "MARKER: the edited Init prompt."


def ended(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(f"ended {NAME}:"))


async def test_a_new_scenario_records_on_the_api_and_replays_offline(tmp_path: Path) -> None:
    """The scaffold runs unchanged but for its Init prompt: Init's requests carry that prompt,
    the run is recorded, and the replay without a key ends the same way."""
    made = await anyio.to_thread.run_sync(
        lambda: subprocess.run(
            [BATON, "new", NAME, "--dir", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            check=False,
        )
    )
    assert 0 == made.returncode, made.stderr
    folder = tmp_path / "scenarios" / NAME
    (folder / "prompts" / "init.md").write_text(MARKER + "\n", encoding="utf-8")
    async with MessagesAPIStandIn() as api:
        code, out, err = await finish(start(tmp_path, [*RUN, "--record"], clean_env(api.env())))
        systems = [
            json.dumps(r.body.get("system"), ensure_ascii=False)
            for r in api.requests_to("messages")
            if r.headers.get("x-baton-actor") == "init"
        ]
    assert 1 == code, err[-2000:]  # the scaffold's scenario fails: `--exit-when-idle` says so
    assert systems
    assert all(MARKER in system for system in systems)
    recorded = ended(out)
    assert recorded.startswith(f"ended {NAME}: failed")
    assert (folder / "recording.jsonl").is_file()
    code, replay_out, err = await finish(start(tmp_path, RUN, clean_env()))
    assert 1 == code, err[-2000:]
    assert f"baton: offline: replaying scenarios/{NAME}/recording.jsonl" in replay_out
    assert recorded == ended(replay_out)
