"""`baton run` as a real process: CLI and client against it, signals, stale files, refusal."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import anyio

import baton
from baton.runtime.pipeline import model_mode

BATON = str(Path(sys.executable).parent / "baton")
HERE = Path(__file__).resolve().parent
DEADLINE = 20.0


def env() -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "BATON_"))}
    return {**clean, "PYTHONPATH": str(HERE)}


def read_line(stream: IO[str] | None, deadline: float = DEADLINE) -> str:
    """The next line of a child's stdout, failing the test if none comes before the deadline."""
    assert stream is not None
    ready, _, _ = select.select([stream], [], [], deadline)
    assert ready, "the process printed nothing before the deadline"
    return stream.readline().rstrip("\n")


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
def running(workspace: Path, *args: str) -> Iterator[subprocess.Popen[str]]:
    """`baton run` in `workspace`, started and its banner read; SIGTERMed if still alive."""
    with (workspace / "run.err").open("w") as err:
        proc = subprocess.Popen(
            [BATON, "run", "--workspace", str(workspace), *args],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=env(),
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=DEADLINE)
        assert proc.stdout is not None
        proc.stdout.close()


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
        banner = read_line(proc.stdout)
        mode = stat.S_IMODE((ws / ".baton" / "control.sock").stat().st_mode)
        pid = int((ws / ".baton" / "baton.pid").read_text())
        status = cli(ws, "status", "--json")
        told = cli(ws, "tell", "greeter", "Hello", '{"name": "a"}')
        asked = cli(ws, "ask", "greeter", "Hello", '{"name": "b"}')
        tail = subprocess.Popen(
            [BATON, "tail", "-f", "--json", "--workspace", str(ws)],
            stdout=subprocess.PIPE,
            text=True,
            env=env(),
        )
        failed = cli(ws, "ask", "failing", "Boom", "{}")
        # Two restarts, the dead letter, then the restart after giving up on the message.
        followed = [json.loads(read_line(tail.stdout))["event"] for _ in range(4)]
        tail.send_signal(signal.SIGINT)
        tail_code = tail.wait(timeout=DEADLINE)
        assert tail.stdout is not None
        tail.stdout.close()
        reply, token_records = anyio.run(client_round_trip, ws)
        second = cli(ws, "run")
        submitted = cli(ws, "submit", "leave_application")
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=DEADLINE)
    lines = (ws / ".baton" / "logs" / "tokens.jsonl").read_text().splitlines()
    assert (
        f"baton: {model_mode({})} · workspace {ws} · socket "
        f"{ws}/.baton/control.sock · token log {ws}/.baton/logs/tokens.jsonl"
    ) == banner
    assert (0o600, proc.pid) == (mode, pid)
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
    assert f"a baton runtime (pid {proc.pid}) already runs in {ws}" in second.stderr
    assert (1, 1) == (submitted.returncode, len(submitted.stderr.splitlines()))
    assert "no scenario 'leave_application'" in submitted.stderr
    assert (0, [False, False]) == (code, control_files(ws))
    records = [json.loads(line) for line in lines]
    # The client saw the 4 records of the failing ask; the refused submit adds its dead letter.
    assert 4 == token_records
    assert ["message.dead_lettered"] == [r["event"] for r in records[4:]]
    assert "StartScenario" == records[4]["message_type"]


def test_stale_files_are_replaced_and_sigint_drains(tmp_path: Path) -> None:
    """A dead process's pid file and socket do not block `baton run`; SIGINT exits 0 clean."""
    control = tmp_path / ".baton"
    control.mkdir()
    (control / "baton.pid").write_text("999999999\n")
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(str(control / "control.sock"))
    leftover.close()
    with running(tmp_path) as proc:
        banner = read_line(proc.stdout)
        status = cli(tmp_path, "status", "--json")
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=DEADLINE)
    assert banner.startswith("baton: offline scripted model")
    assert (0, proc.pid) == (status.returncode, json.loads(status.stdout)["pid"])
    assert (0, [False, False]) == (code, control_files(tmp_path))


def test_baton_stop_waits_for_the_process_to_exit(tmp_path: Path) -> None:
    """`baton stop` returns once the runtime has drained and exited 0."""
    with running(tmp_path) as proc:
        read_line(proc.stdout)
        stopped = cli(tmp_path, "stop")
        files = control_files(tmp_path)
        code = proc.wait(timeout=DEADLINE)
    assert (0, f"stopped the runtime in {tmp_path} (pid {proc.pid})\n") == (
        stopped.returncode,
        stopped.stdout,
    )
    assert ([False, False], 0) == (files, code)


def test_exit_when_idle_without_a_scenario_exits_after_start(tmp_path: Path) -> None:
    """`baton run --exit-when-idle` with no active scenario prints its banner and exits 0."""
    result = cli(tmp_path, "run", "--exit-when-idle")
    assert (0, 1) == (result.returncode, len(result.stdout.splitlines()))
    assert [False, False] == control_files(tmp_path)


def test_submit_on_start_of_an_unknown_scenario_fails_clearly(tmp_path: Path) -> None:
    """`baton run --submit X` for a scenario that does not exist exits 1 saying so, and
    leaves nothing behind."""
    result = cli(tmp_path, "run", "--submit", "nonesuch")
    last = result.stderr.splitlines()[-1]
    assert 1 == result.returncode
    assert last.startswith("baton run: error: no scenario 'nonesuch'")
    assert [False, False] == control_files(tmp_path)
