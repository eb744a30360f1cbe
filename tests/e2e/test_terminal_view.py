"""`baton run` on a real terminal (tmux): the live panel while it runs, the summary at the end,
and the log in its file, not on the screen."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
from pathlib import Path

from baton.testing import read_token_log
from tests.e2e.test_process import (
    BATON,
    DEADLINE,
    SCENARIO,
    env,
    running,
    scenario_workspace,
)

TMUX = "/usr/bin/tmux"
RUN_DEADLINE = 120.0
FILL = re.compile(r"\d+(\.\d)?[KM]? / \d+(\.\d)?[KM]?")


class Terminal:
    """A 160x50 tmux session on a server of its own (so it has this test's environment)."""

    def __init__(self, workspace: Path, command: str) -> None:
        self.socket = f"baton-test-{os.getpid()}"
        self.done = f"baton-done-{os.getpid()}"
        # The pane outlives the command (`read` waits) so its last screen can be read.
        signal_done = self._tmux("wait-for", "-S", self.done)
        script = f'{command}; echo "baton exited with $?"; {signal_done}; read line'
        self._run("new-session", "-d", "-x", "160", "-y", "50", "-c", str(workspace), script)

    def _tmux(self, *args: str) -> str:
        return shlex.join([TMUX, "-L", self.socket, *args])

    def _run(self, *args: str, timeout: float = DEADLINE) -> str:
        result = subprocess.run(
            [TMUX, "-L", self.socket, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env(),
            check=True,
        )
        return result.stdout

    def screen(self) -> str:
        """What the pane shows now, as text (no escape codes)."""
        return self._run("capture-pane", "-p")

    def send_keys(self, *keys: str) -> None:
        """Type `keys` into the pane (tmux key names: `C-c` is Ctrl-C)."""
        self._run("send-keys", *keys)

    def wait_done(self) -> None:
        """Return once the command has exited."""
        self._run("wait-for", self.done, timeout=RUN_DEADLINE)

    def kill(self) -> None:
        subprocess.run(
            [TMUX, "-L", self.socket, "kill-server"], capture_output=True, env=env(), check=False
        )


def showing_an_agent(screen: str) -> bool:
    """The live panel: the scenario's title, and an agent row with its context fill."""
    rows = [line for line in screen.splitlines() if re.search(r"\b(init|execute)\b", line)]
    return f"{SCENARIO} · " in screen and any(FILL.search(row) for row in rows)


def test_the_terminal_shows_the_live_panel_then_the_summary_and_no_log_lines(
    tmp_path: Path,
) -> None:
    """README's main job in a real terminal: while it runs the panel shows the scenario and an
    agent with its context fill; at the end the screen has the summary (model calls, tokens,
    $0.00 for the offline model) and no JSON log line, which are in .baton/logs/baton.jsonl."""
    workspace = scenario_workspace(tmp_path)
    command = shlex.join([BATON, "run", "--submit", SCENARIO, "--auto-approve", "--exit-when-idle"])
    terminal = Terminal(workspace, command)
    try:
        running: str | None = None
        deadline = time.monotonic() + RUN_DEADLINE
        while running is None and time.monotonic() < deadline:
            screen = terminal.screen()
            if "baton: summary" in screen:
                break
            if showing_an_agent(screen):
                running = screen
        terminal.wait_done()
        final = terminal.screen()
    finally:
        terminal.kill()
    assert running is not None, "the live panel never showed an agent while the run went on"
    assert "baton exited with 0" in final, final
    summary = final[final.index("baton: summary") :].splitlines()
    offline = [line.split() for line in summary if line.strip().startswith("offline-scripted")]
    assert re.match(r"baton: summary · [1-9]\d* model calls · \d+ compactions? · ", summary[0])
    assert ["model", "calls", "input", "cache", "write", "cache", "read", "output", "cost"] == (
        summary[1].split()
    )
    assert "$0.00" == offline[0][-1]
    assert int(offline[0][1]) > 0
    assert (False, False) == ('{"event"' in final, '"event":' in final)
    logged = [
        json.loads(line)
        for line in (workspace / ".baton" / "logs" / "baton.jsonl").read_text().splitlines()
    ]
    events = {record["event"] for record in logged}
    assert {"pipeline.started", "run.idle", "run.stopping"} <= events
    # The panel's last tool comes from `tools` of the `model.call` records.
    calls = [r for r in read_token_log(workspace) if r["event"] == "model.call"]
    assert "handoff_to_execute" in {tool for call in calls for tool in call["tools"]}
    assert "complete_scenario" in final


def test_a_run_stopped_mid_scenario_prints_plain_progress_and_the_summary(
    tmp_path: Path,
) -> None:
    """Piped (no terminal), without --auto-approve: a plain line for Init's handoff and the
    wait for approval; SIGTERM then ends the run with the summary of the calls made so far."""
    workspace = scenario_workspace(tmp_path)
    with running(workspace, "--submit", SCENARIO) as run:
        lines = [run.read_line()]
        while "awaiting_approval" not in lines[-1]:
            lines.append(run.read_line())
        code = run.stop()
        rest = [run.read_line()]  # read from what the reader kept: the process has exited
        while not rest[-1].startswith("  logs: "):
            rest.append(run.read_line())
    progress = [line.split(" ", 1)[1] for line in lines if re.match(r"\d\d:\d\d:\d\d ", line)]
    assert 0 == code
    assert [
        f"{SCENARIO}: init handed off (init_to_execute)",
        f"{SCENARIO}: awaiting_approval (iteration 0)",
    ] == progress
    # SIGTERM is said at once; a model call in flight, if any, is waited for and said too.
    assert "baton: stopping… (press Ctrl-C again to stop at once)" == rest[0]
    summary = [line for line in rest if line.startswith("baton: summary")]
    assert re.match(r"baton: summary · [1-9]\d* model calls · ", summary[0]), rest
    assert f"  {SCENARIO}: awaiting_approval (iteration 0)" in rest
    assert "\x1b" not in "".join(lines + rest)
