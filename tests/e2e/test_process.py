"""`baton run` as a real process: CLI and client against it, signals, stale files, refusal."""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import anyio

import baton
from baton.pipeline.host import model_mode
from baton.testing import read_token_log

BATON = str(Path(sys.executable).parent / "baton")
HERE = Path(__file__).resolve().parent
DEADLINE = 20.0


def env() -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "BATON_"))}
    return {**clean, "PYTHONPATH": str(HERE)}


class Child:
    """A child process whose stdout lines are read by a thread, so a wait has a real deadline.

    `select` on the pipe is not enough: one `readline` can pull several lines into Python's
    buffer, and the next `select` then waits for bytes that already arrived."""

    def __init__(
        self,
        argv: list[str],
        stderr: IO[str] | None = None,
        environ: dict[str, str] | None = None,
    ) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env={**env(), **(environ or {})},
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def read_line(self, deadline: float = DEADLINE) -> str:
        """The next line of stdout, failing the test if none comes before the deadline."""
        try:
            line = self._lines.get(timeout=deadline)
        except queue.Empty:
            raise AssertionError("the process printed nothing before the deadline") from None
        assert line is not None, f"the process exited ({self.proc.wait()}) before printing a line"
        return line

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> int:
        """Signal the child unless it has exited, reap it and close its pipe; its exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=DEADLINE)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._reader.join(DEADLINE)
            assert self.proc.stdout is not None
            self.proc.stdout.close()
        return code


@contextmanager
def follow(workspace: Path, *args: str) -> Iterator[Child]:
    """`baton tail -f --json ARGS` on the workspace, stopped with SIGINT on leaving."""
    child = Child([BATON, "tail", "-f", "--json", *args, "--workspace", str(workspace)])
    try:
        yield child
    finally:
        child.stop(signal.SIGINT)


def cli(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BATON, *args, "--workspace", str(workspace)],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        env=env(),
        check=False,
    )


@contextmanager
def running(workspace: Path, *args: str) -> Iterator[Child]:
    """`baton run` in `workspace`; SIGTERMed and reaped on leaving if still alive."""
    with (workspace / "run.err").open("w") as err:
        child = Child([BATON, "run", "--workspace", str(workspace), *args], stderr=err)
    try:
        yield child
    finally:
        child.stop()


def control_files(workspace: Path) -> list[bool]:
    return [(workspace / ".baton" / name).exists() for name in ("control.sock", "baton.pid")]


async def client_round_trip(workspace: Path) -> tuple[Any, int]:
    async with baton.connect(workspace) as client:
        reply = await client.ask("greeter", "Hello", {"name": "client"})
        return reply, (await client.status()).token_records


def test_cli_and_client_drive_a_running_process_until_sigterm(tmp_path: Path) -> None:
    """Status, tell, ask, tail -f and the client work against `baton run`; SIGTERM exits 0 clean."""
    ws = tmp_path
    actors = ["--actor", "greeter=e2e_actors:Greeter", "--actor", "failing=e2e_actors:Failing"]
    with running(ws, *actors) as proc:
        banner = proc.read_line()
        mode = stat.S_IMODE((ws / ".baton" / "control.sock").stat().st_mode)
        pid = int((ws / ".baton" / "baton.pid").read_text())
        status = cli(ws, "status", "--json")
        told = cli(ws, "tell", "greeter", "Hello", '{"name": "a"}')
        asked = cli(ws, "ask", "greeter", "Hello", '{"name": "b"}')
        with follow(ws) as tail:
            failed = cli(ws, "ask", "failing", "Boom", "{}")
            # Two restarts, the dead letter, then the restart after giving up on the message.
            followed = [json.loads(tail.read_line())["event"] for _ in range(4)]
        tail_code = tail.proc.returncode
        reply, token_records = anyio.run(client_round_trip, ws)
        second = cli(ws, "run")
        submitted = cli(ws, "submit", "leave_application")
        code = proc.stop()
    records = read_token_log(ws)
    assert (
        f"baton: {model_mode({})} · workspace {ws} · socket "
        f"{ws}/.baton/control.sock · token log {ws}/.baton/logs/tokens.jsonl"
    ) == banner
    assert (0o600, proc.proc.pid) == (mode, pid)
    assert (0, ["execute", "failing", "greeter", "init", "scheduler"]) == (
        status.returncode,
        sorted(actor["name"] for actor in json.loads(status.stdout)["actors"]),
    )
    assert (0, "queued Hello for greeter\n") == (told.returncode, told.stdout)
    assert (0, '{"text": "hi b"}\n') == (asked.returncode, asked.stdout)
    assert (1, 1) == (failed.returncode, len(failed.stderr.splitlines()))
    assert "actor 'failing' failed handling 'Boom': ValueError: boom" in failed.stderr
    assert (
        ["actor.restarted", "actor.restarted", "message.dead_lettered", "actor.restarted"],
        0,
    ) == (followed, tail_code)
    assert {"text": "hi client"} == reply
    assert (1, 1) == (second.returncode, len(second.stderr.splitlines()))
    assert f"a baton runtime (pid {proc.proc.pid}) already runs in {ws}" in second.stderr
    assert (1, 1) == (submitted.returncode, len(submitted.stderr.splitlines()))
    assert "no scenario 'leave_application'" in submitted.stderr
    assert (0, [False, False]) == (code, control_files(ws))
    # The client saw the 4 records of the failing ask; the refused submit is an error for
    # the one who sent it, not a dead letter: nothing after them.
    assert 4 == token_records
    assert [] == [r["event"] for r in records[4:]]


def test_stale_files_are_replaced_and_sigint_drains(tmp_path: Path) -> None:
    """A dead process's pid file and socket do not block `baton run`; SIGINT exits 0 clean."""
    control = tmp_path / ".baton"
    control.mkdir()
    (control / "baton.pid").write_text("999999999\n")
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(str(control / "control.sock"))
    leftover.close()
    with running(tmp_path) as proc:
        banner = proc.read_line()
        status = cli(tmp_path, "status", "--json")
        code = proc.stop(signal.SIGINT)
    assert banner.startswith("baton: offline scripted model")
    assert (0, proc.proc.pid) == (status.returncode, json.loads(status.stdout)["pid"])
    assert (0, [False, False]) == (code, control_files(tmp_path))


def test_baton_stop_waits_for_the_process_to_exit(tmp_path: Path) -> None:
    """`baton stop` returns once the runtime has drained and exited 0."""
    with running(tmp_path) as proc:
        proc.read_line()
        stopped = cli(tmp_path, "stop")
        files = control_files(tmp_path)
        code = proc.proc.wait(timeout=DEADLINE)
    assert (0, f"stopped the runtime in {tmp_path} (pid {proc.proc.pid})\n") == (
        stopped.returncode,
        stopped.stdout,
    )
    assert ([False, False], 0) == (files, code)


def test_exit_when_idle_without_a_scenario_exits_after_start(tmp_path: Path) -> None:
    """`baton run --exit-when-idle` with no active scenario prints its banner, a summary of
    no model calls, and exits 0."""
    result = cli(tmp_path, "run", "--exit-when-idle")
    lines = result.stdout.splitlines()
    summary = "baton: summary · 0 model calls · 0 compactions · 0 handoffs"
    assert (0, summary, "  no model calls") == (result.returncode, lines[1], lines[2])
    assert lines[0].startswith("baton: offline scripted model")
    assert [False, False] == control_files(tmp_path)


def test_submit_on_start_of_an_unknown_scenario_fails_clearly(tmp_path: Path) -> None:
    """`baton run --submit X` for a scenario that does not exist exits 1 saying so, and
    leaves nothing behind."""
    result = cli(tmp_path, "run", "--submit", "nonesuch")
    last = result.stderr.splitlines()[-1]
    assert 1 == result.returncode
    assert last.startswith("baton run: error: no scenario 'nonesuch'")
    assert [False, False] == control_files(tmp_path)


ROOT = HERE.parents[1]
SCENARIO = "leave_application"


def scenario_workspace(tmp_path: Path) -> Path:
    """A workspace holding the shipped scenario's inputs, as the repository has them."""
    folder = tmp_path / "scenarios" / SCENARIO
    folder.mkdir(parents=True)
    for name in ("scenario.toml", "offline_script.json"):
        shutil.copy(ROOT / "scenarios" / SCENARIO / name, folder)
    return tmp_path


def readme_main_job() -> list[str]:
    """README's main-job command, without its install steps, run with this venv's baton."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    marked = re.search(r"<!-- ci:main -->\n```sh\n(.+)\n```", readme)
    assert marked is not None, "README has no main-job command after <!-- ci:main -->"
    *install, job = marked.group(1).split(" && ")
    assert "pip install -e ." in " && ".join(install)
    argv = shlex.split(job)
    assert ".venv/bin/baton" == argv[0]
    return [BATON, *argv[1:]]


def test_readme_main_job_runs_the_scenario_offline_and_again(tmp_path: Path) -> None:
    """README's one command completes leave_application offline; run again in the same
    workspace it starts a fresh run of the scenario and completes again."""
    ws = scenario_workspace(tmp_path)
    runs = [
        subprocess.run(
            readme_main_job(),
            cwd=ws,
            capture_output=True,
            text=True,
            timeout=120,
            env=env(),
            check=False,
        )
        for _ in range(2)
    ]
    for run in runs:
        lines = run.stdout.splitlines()
        assert 0 == run.returncode, run.stderr[-2000:]
        assert lines[0].startswith("baton: offline scripted model (ANTHROPIC_API_KEY not set)")
        ended = [line for line in lines if line.startswith("ended ")]
        assert [f"ended {SCENARIO}: completed (iteration 2)"] == [e.split(" — ")[0] for e in ended]
        assert "  offline-scripted" in "\n".join(lines[lines.index(ended[0]) :])
    outputs = ws / "scenarios" / SCENARIO / "execution_outputs"
    assert (outputs / "iteration_2" / "failure_summary.json").is_file()
    records = read_token_log(ws)
    calls = [r for r in records if r["event"] == "model.call"]
    assert {"offline-scripted"} == {r["model"] for r in calls}
    runs_seen = {r["conversation"] for r in calls if r["actor"] == "init"}
    assert {SCENARIO, f"{SCENARIO}@2"} == runs_seen


def test_hitl_flow_through_the_cli(tmp_path: Path) -> None:
    """The three-terminal flow: `baton run`, `baton submit`, `baton tail -f`; each Init →
    Execute handoff waits in `status` until `baton approve`; the scenario completes."""
    ws = scenario_workspace(tmp_path)
    with running(ws) as proc:
        proc.read_line()
        tail = Child(
            [BATON, "tail", "-f", "--json", "--event", "handoff.received", "--workspace", str(ws)]
        )

        def next_received(handoff_type: str) -> None:
            """Read `tail -f` until the Scheduler has received a handoff of this type."""
            while True:
                record = json.loads(tail.read_line(60))
                if (record["actor"], record["handoff_type"]) == ("scheduler", handoff_type):
                    return

        submitted = cli(ws, "submit", SCENARIO)
        waiting = []
        for handoff_type in ("init_to_execute", "execute_to_init", "init_to_execute"):
            next_received(handoff_type)
            if handoff_type == "init_to_execute":
                status = json.loads(cli(ws, "status", "--json").stdout)
                waiting.append([(s["scenario"], s["phase"]) for s in status["pending_approvals"]])
                assert 0 == cli(ws, "approve", SCENARIO).returncode
        next_received("scenario_complete")
        table = cli(ws, "status")
        compacted = cli(ws, "tail", "--json", "--event", "context.compacted")
        tail.stop(signal.SIGINT)
        code = proc.stop()
    assert (0, f"{SCENARIO}: designing") == (
        submitted.returncode,
        submitted.stdout.split(" (")[0],
    )
    assert [[(SCENARIO, "awaiting_approval")]] * 2 == waiting
    assert f"{SCENARIO}: completed (iteration 2)" in table.stdout
    actors = {json.loads(line)["actor"] for line in compacted.stdout.splitlines()}
    assert {"init", "execute"} <= actors
    assert 0 == code
