"""The offline model's sources as a run meets them: an offline script or a recording that is
not a regular file, nests too deep or has the wrong shape is refused at once, in one line
naming the file and where in it, spending no restart; a script that has run out says so
instead of blaming the API key (docs/scenarios.md, "Offline script"; docs/recordings.md)."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from baton import Runtime
from baton.context.payload import Payload
from baton.errors import BatonError
from baton.models.errors import RecordingFileError, ScriptExhaustedError, ScriptFileError
from baton.models.protocol import CallContext, bind_call
from baton.models.recording import RECORDING_FILE
from baton.pipeline.host import open_pipeline
from baton.pipeline.messages import StartScenario
from baton.pipeline.offline_model import OfflineModel
from tests.pipeline.test_scheduler import BASE, NAME, design_turns, make_scenario, wait_for_phase

PAYLOAD: Payload = {"max_tokens": 64, "messages": [{"role": "user", "content": "go"}]}
DEEP = 100_000

# A recorded task summary whose `response.content` is a string, not a list of blocks.
NOT_A_LIST = {
    "format": "baton.recording/1",
    "actor": "scheduler",
    "conversation": NAME,
    "turn": 0,
    "purpose": "task_summary",
    "scenario": NAME,
    "recorded_at": "2026-11-20T10:00:00Z",
    "response": {
        "content": "Design the leave rules.",
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 5},
        "model": "claude-opus-5-5",
        "latency_ms": 900.0,
    },
}


def unblock(fifo: Path) -> None:
    """Open `fifo` for writing and close it: a reader blocked opening it (the bug) goes on,
    reading end of file, so the test fails instead of hanging."""
    with contextlib.suppress(OSError):  # ENXIO: no reader waits on it
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def restarts(rt: Runtime) -> dict[str, int]:
    return {s.name: s.restarts for s in rt.status()}


def deep_script() -> str:
    """A script whose second actor's turn, on line 3, nests `DEEP` arrays."""
    return '{"actors": {\n  "init": ["ok"],\n  "execute": [' + "[" * DEEP + "]" * DEEP + "]\n}}\n"


def damage(workspace: Path, kind: str) -> tuple[type[BatonError], str]:
    """Damage `kind` in the scenario's folder; the error expected and what it must say."""
    folder = workspace / BASE
    if kind == "deep script":
        (folder / "script.json").write_text(deep_script(), encoding="utf-8")
        return ScriptFileError, f"cannot load model script {BASE}/script.json: line 3: "
    good = json.dumps({**NOT_A_LIST, "response": {**NOT_A_LIST["response"], "content": []}})
    bad: Any = "[" * DEEP + "]" * DEEP if kind == "deep recording" else json.dumps(NOT_A_LIST)
    (folder / RECORDING_FILE).write_text(f"{good}\n{bad}\n", encoding="utf-8")
    return RecordingFileError, f"recording {BASE}/{RECORDING_FILE} line 2 is not a recorded reply"


@pytest.mark.parametrize("kind", ["deep script", "deep recording", "content not a list"])
async def test_a_damaged_source_refuses_the_submit_once_naming_the_file_and_line(
    tmp_path: Path, kind: str
) -> None:
    """A script or recording line nested 100,000 deep, or a recorded reply whose content is
    not a list: the submit is refused at once with the file and the line, no restart."""
    make_scenario(tmp_path, init=design_turns(1), execute=[])
    error, named = damage(tmp_path, kind)
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        with pytest.raises(error) as refused:
            await rt.ask("scheduler", StartScenario(scenario=NAME))
        counts = restarts(rt)
    message = str(refused.value)
    assert {"scheduler": 0, "init": 0, "execute": 0} == counts
    assert 1 == len(message.splitlines())
    assert message.startswith(named)
    problem = (
        "response.content must be a list of blocks"
        if kind == "content not a list"
        else "arrays and objects nest more than 100 levels deep"
    )
    assert problem in message


@pytest.mark.parametrize("name", ["script.json", RECORDING_FILE])
async def test_a_named_pipe_for_a_script_or_recording_is_refused_without_waiting(
    tmp_path: Path, name: str
) -> None:
    """A FIFO at the offline script's or the recording's path is never waited on: the submit
    is refused within the deadline, naming the file as a named pipe, and nothing restarts."""
    make_scenario(tmp_path, init=design_turns(1), execute=[])
    fifo = tmp_path / BASE / name
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        try:
            with anyio.fail_after(5), pytest.raises((ScriptFileError, RecordingFileError)) as got:
                await rt.ask("scheduler", StartScenario(scenario=NAME))
        finally:
            unblock(fifo)  # a reader blocked on it (the bug) goes on, so the runtime can stop
        counts = restarts(rt)
    assert {"scheduler": 0, "init": 0, "execute": 0} == counts
    message = str(got.value)
    assert (True, True) == (f"{BASE}/{name}" in message, "a named pipe" in message)


async def test_a_directory_for_a_recording_is_refused_not_passed_over(tmp_path: Path) -> None:
    """A directory at `recording.jsonl` is named, not silently skipped for the script."""
    make_scenario(tmp_path, init=design_turns(1), execute=[])
    (tmp_path / BASE / RECORDING_FILE).mkdir()
    offline = OfflineModel(tmp_path)
    with (
        bind_call(CallContext(actor="init", conversation=NAME, scenario=NAME, turn=0)),
        pytest.raises(RecordingFileError) as refused,
    ):
        await offline.create(PAYLOAD)
    assert str(refused.value).startswith(
        f"recording {BASE}/{RECORDING_FILE} is a directory, not a recording — move it aside"
    )


async def test_a_script_that_has_run_out_names_the_file_the_actor_and_the_turn(
    tmp_path: Path,
) -> None:
    """Past its last turn, or for an actor it does not name, a scenario's script fails the
    call naming itself, the actor, the turn and how many turns it has, and says how to go on;
    a call of no scenario still gets the fixed no-API-key reply."""
    make_scenario(tmp_path, init=["only turn"], execute=[])
    offline = OfflineModel(tmp_path)
    errors = []
    for actor, turn in (("init", 1), ("execute", 0)):
        with (
            bind_call(CallContext(actor=actor, conversation=NAME, scenario=NAME, turn=turn)),
            pytest.raises(ScriptExhaustedError) as ran_out,
        ):
            await offline.create(PAYLOAD)
        errors.append(str(ran_out.value))
    with bind_call(CallContext(actor="init", conversation="main", turn=0)):
        unscripted = await offline.create(PAYLOAD)
    assert [
        f"the offline script {BASE}/script.json has no turn 1 for actor 'init' (it has 1 turns)",
        f"the offline script {BASE}/script.json has no turn 0 for actor 'execute' (it has 0 turns)",
    ] == [error.split(" — ")[0] for error in errors]
    assert all(
        error.endswith(
            f"— extend the script, record a run to replay with `baton run --record --submit "
            f"{NAME}` (needs ANTHROPIC_API_KEY), or set ANTHROPIC_API_KEY to run on Claude"
        )
        for error in errors
    )
    assert "No API key is set, so no model ran for 'init'" in unscripted.text


async def test_a_scenario_whose_script_runs_out_fails_at_once_saying_so(tmp_path: Path) -> None:
    """Init's script ends before its handoff: the scenario fails on the first missing turn
    with the script's words, not after reminders with a reply blaming the API key."""
    make_scenario(tmp_path, init=design_turns(1)[:1], execute=[])
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        await rt.ask("scheduler", StartScenario(scenario=NAME))
        done = await wait_for_phase(rt, "failed", "awaiting_approval")
        counts = restarts(rt)
    assert "failed" == done.phase
    assert done.reason is not None
    assert (
        f"init refused work order {NAME}#1: ScriptExhaustedError: the offline script "
        f"{BASE}/script.json has no turn 1 for actor 'init' (it has 1 turns)"
    ) in done.reason
    assert "API key is set" not in done.reason
    assert {"scheduler": 0, "init": 0, "execute": 0} == counts
