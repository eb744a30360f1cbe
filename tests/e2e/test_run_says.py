"""`baton run` never leaves its user guessing: what it checks at start, a round waiting for
an unreachable API, a scenario's end and why, a new run's phase, Ctrl-C, usage errors and
exit statuses — said where the person looks, within seconds."""

from __future__ import annotations

import json
import re
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path

from tests.e2e.test_process import BATON, DEADLINE, SCENARIO, Child, env, scenario_workspace
from tests.e2e.test_terminal_view import RUN_DEADLINE, Terminal

WAITING = re.compile(
    rf"^\d\d:\d\d:\d\d {SCENARIO}: waiting: init: API unreachable, retrying at \d\d:\d\d:\d\d$"
)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def unreachable_api() -> dict[str, str]:
    return {
        "ANTHROPIC_API_KEY": "sk-test",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{closed_port()}",
    }


def lines_until(child: Child, done: re.Pattern[str], deadline: float) -> list[str]:
    """The lines printed until one matches `done` (included), within `deadline` seconds."""
    lines: list[str] = []
    give_up = time.monotonic() + deadline
    while not lines or not done.search(lines[-1]):
        left = give_up - time.monotonic()
        assert left > 0, f"no line matching {done.pattern!r} in time; printed: {lines}"
        lines.append(child.read_line(left))
    return lines


def test_an_unreachable_api_is_said_within_seconds_and_ctrl_c_stops_at_once(
    tmp_path: Path,
) -> None:
    """With a key and `ANTHROPIC_BASE_URL` at a closed port, piped: the start says it checks
    the models and, within seconds, that the Models API did not answer (the configured limits
    serve); after the submit, the round's wait for the API is a line of its own; Ctrl-C says
    `stopping…` at once and the process is gone within seconds (it once waited 10-14 s in
    silence, after 20 s of silence at start)."""
    workspace = scenario_workspace(tmp_path)
    argv = [BATON, "run", "--workspace", str(workspace), "--submit", SCENARIO, "--auto-approve"]
    with (workspace / "run.err").open("w") as err:
        child = Child(argv, stderr=err, environ=unreachable_api())
    try:
        started = time.monotonic()
        first = child.read_line(10)
        assert first.startswith("baton: checking the agents' models with the Models API at")
        banner = child.read_line(10)
        to_banner = time.monotonic() - started
        assert banner.startswith("baton: Claude (ANTHROPIC_API_KEY set)")
        printed = lines_until(child, WAITING, 30)
        assert printed[0].startswith(f"submitted {SCENARIO}: designing")
        child.proc.send_signal(signal.SIGINT)
        stopping = child.read_line(5)
        stop_sent = time.monotonic()
        code = child.stop(signal.SIGINT)
        to_exit = time.monotonic() - stop_sent
    finally:
        child.stop()
    warnings = (workspace / "run.err").read_text(encoding="utf-8")
    assert (True, True) == (to_banner < 8, to_exit < 5), (to_banner, to_exit)
    assert "baton: stopping… (press Ctrl-C again to stop at once)" == stopping
    assert 0 == code
    assert (
        "baton: warning: the Models API did not answer for claude-opus-5-5 (APIConnectionError); "
        "using the configured context window (1,000,000 tokens) — check ANTHROPIC_BASE_URL and "
        "the network"
    ) in warnings.splitlines()


def failing_workspace(tmp_path: Path) -> Path:
    """The shipped scenario as `brief`, its offline script cut to Init's first turn: the
    scenario fails once Init asks for a second one (the script has none)."""
    workspace = scenario_workspace(tmp_path)
    shipped = workspace / "scenarios" / SCENARIO
    folder = workspace / "scenarios" / "brief"
    shipped.rename(folder)
    script = json.loads((folder / "offline_script.json").read_text(encoding="utf-8"))
    script["actors"] = {"init": script["actors"]["init"][:1]}
    (folder / "offline_script.json").write_text(json.dumps(script), encoding="utf-8")
    return workspace


def test_a_failed_scenario_says_why_and_a_new_run_says_its_phase(tmp_path: Path) -> None:
    """A long-lived run (no `--exit-when-idle`): a scenario that fails prints `ended NAME:
    failed — reason` as it ends; submitted again from another shell, its new run's phase is
    printed at once (the panel once kept showing the old run's `failed`)."""
    workspace = failing_workspace(tmp_path)
    argv = [BATON, "run", "--workspace", str(workspace), "--submit", "brief", "--auto-approve"]
    with (workspace / "run.err").open("w") as err:
        child = Child(argv, stderr=err)
    try:
        ended = lines_until(child, re.compile(r"^ended brief: "), RUN_DEADLINE)[-1]
        resubmit = subprocess.run(
            [BATON, "submit", "brief", "--workspace", str(workspace)],
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            env=env(),
            check=False,
        )
        phase = lines_until(child, re.compile(r"brief: designing \(iteration 0\)$"), 15)[-1]
    finally:
        code = child.stop()
    offline = subprocess.run(
        [BATON, "status", "--workspace", str(workspace)],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        env=env(),
        check=False,
    )
    assert 1 == offline.returncode  # not running, and it says what the files say:
    assert "  brief: failed (iteration 0) — init refused work order brief@2#1" in offline.stdout
    assert ended.startswith("ended brief: failed (iteration 0) — ")
    assert "has no turn 1 for actor 'init'" in ended  # and why
    assert (0, 0) == (resubmit.returncode, code), resubmit.stderr
    assert re.match(r"^\d\d:\d\d:\d\d brief: designing \(iteration 0\)$", phase)


def test_usage_errors_are_one_line_naming_what_was_probably_meant(tmp_path: Path) -> None:
    """A scenario name that breaks the rule is one line and exit 2 (it was a 100-line
    traceback for `run --submit`, and a pointer to /openapi.json for `submit`); a mistyped
    scenario or configuration key names the one it probably was."""
    workspace = scenario_workspace(tmp_path)

    def baton(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [BATON, *args, "--workspace", str(workspace)],
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            env=env(),
            check=False,
        )

    bad_run = baton("run", "--submit", "../x", "--exit-when-idle")
    bad_submit = baton("submit", "_x")
    typo = baton("run", "--submit", "leave_aplication", "--exit-when-idle")
    (workspace / "baton.toml").write_text("[runtime]\nmailbox_capasity = 5\n")
    key = baton("run", "--exit-when-idle")
    assert (2, 2) == (bad_run.returncode, bad_submit.returncode)
    assert [
        "baton run: error: argument --submit: scenario name '../x' is not allowed: it starts "
        "with '.'; a scenario name is 1 to 120 characters, starts with a letter or a digit and "
        "goes on with letters, digits, '_', '-' or '.' — see `baton run --help`"
    ] == bad_run.stderr.splitlines()
    assert 1 == len(bad_submit.stderr.splitlines())
    assert "openapi" not in bad_submit.stderr
    assert "did you mean 'leave_application'?" in typo.stderr
    assert "unknown key 'runtime.mailbox_capasity' — did you mean 'mailbox_capacity'?" in key.stderr
    assert (1, 1) == (typo.returncode, key.returncode)


def test_the_live_view_shows_the_wait_for_the_api_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    """On a real terminal (tmux): the panel shows the scenario's phase and, under it, that
    Init waits for the unreachable API; Ctrl-C prints `stopping…` and the process exits."""
    workspace = scenario_workspace(tmp_path)
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in unreachable_api().items())
    run = shlex.join([BATON, "run", "--submit", SCENARIO, "--auto-approve"])
    terminal = Terminal(workspace, f"env {exports} {run}")
    try:
        waiting = ""
        give_up = time.monotonic() + 30
        while "waiting: init: API unreachable" not in waiting and time.monotonic() < give_up:
            waiting = terminal.screen()
        terminal.send_keys("C-c")
        terminal.wait_done()
        final = terminal.screen()
    finally:
        terminal.kill()
    assert f"{SCENARIO} · designing · iteration 0" in waiting
    assert "waiting: init: API unreachable, retrying at" in waiting
    assert "baton: stopping… (press Ctrl-C again to stop at once)" in final
    assert "baton exited with 0" in final
