"""A scenario's inputs travel with its submit when the store is a bucket: copied byte for byte
under the same keys, run outputs left out, fixed for the run; a submit whose inputs cannot be
read or stored is refused once, naming the file (docs/storage.md, "Scenario inputs")."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from baton import Runtime
from baton.models.errors import ScriptFileError
from baton.models.protocol import CallContext, bind_call
from baton.models.recording import RECORDING_FILE
from baton.pipeline.errors import ScenarioInputsError
from baton.pipeline.host import open_pipeline
from baton.pipeline.messages import Approve, ScenarioQuery, StartScenario
from baton.pipeline.offline_model import OfflineModel
from baton.storage import Storage, open_storage
from tests.pipeline.test_offline_model import PAYLOAD, deep_script, restarts, unblock
from tests.pipeline.test_scheduler import (
    BASE,
    NAME,
    design_turns,
    iteration_turns,
    make_scenario,
    wait_for_phase,
)

SCRIPTED = b'requirement = "r"\noffline_script = "s.json"\n'
EXECUTE_PROMPT = "You are the scenario's own Execute, as submitted.\n"
OUTPUTS = {
    "execution_outputs/iteration_1/failure_summary.json": b"{}",
    "unified_scenario_design.yaml": b"scenario: old\n",
    "runs/1/BusinessRules.md": b"# old rules\n",
}


def on_bucket(workspace: Path, s3_url: str) -> None:
    (workspace / "baton.toml").write_text(f'[storage]\nurl = "{s3_url}"\n', encoding="utf-8")


async def stored(storage: Storage) -> dict[str, bytes]:
    """Every object under the scenario's folder, by its path in the folder."""
    listing = await storage.list(BASE)
    return {item.path: await storage.read(f"{BASE}/{item.path}") for item in listing.objects}


async def test_the_submit_stores_the_inputs_as_they_were_and_no_output(
    tmp_path: Path, s3_url: str
) -> None:
    """The scenario's inputs are in the bucket byte for byte once the submit returns, its old
    outputs are not, a recording left in the bucket by an earlier submit is gone, and an
    Execute prompt edited on disk after the submit does not reach the running run."""
    make_scenario(tmp_path, init=design_turns(1), execute=iteration_turns(1, 3, complete=True))
    folder = tmp_path / BASE
    (folder / "prompts").mkdir()
    (folder / "prompts" / "execute.md").write_text(EXECUTE_PROMPT, encoding="utf-8")
    for name, data in OUTPUTS.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    on_bucket(tmp_path, s3_url)
    bucket = open_storage(s3_url, tmp_path)
    await bucket.write(f"{BASE}/{RECORDING_FILE}", b"an earlier run's recording\n")
    inputs = {
        name: (folder / name).read_bytes()
        for name in ("scenario.toml", "script.json", "prompts/execute.md")
    }
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}) as pipeline:
        await rt.ask("scheduler", StartScenario(scenario=NAME))
        at_submit = await stored(bucket)
        (folder / "prompts" / "execute.md").write_text("Edited after the submit.\n")
        await wait_for_phase(rt, "awaiting_approval")
        await rt.ask("scheduler", Approve(scenario=NAME))
        done = await wait_for_phase(rt, "completed", "failed")
        assert pipeline.offline is not None
        systems = {
            _text(call.payload.get("system"))
            for call in pipeline.offline.calls
            if call.context.actor == "execute" and call.context.purpose == "turn"
        }
    # Init may have written its design already: what the submit put there is checked.
    assert inputs == {name: data for name, data in at_submit.items() if name in inputs}
    left = [name for name, data in at_submit.items() if OUTPUTS.get(name) == data]
    assert ([], False) == (left, RECORDING_FILE in at_submit)
    assert ("completed", [EXECUTE_PROMPT]) == (done.phase, sorted(systems))


def _text(system: object) -> str:
    """A payload's system prompt as text (a string, or its blocks' texts joined)."""
    if isinstance(system, str):
        return system
    assert isinstance(system, list)
    return "".join(block["text"] for block in system)


@pytest.mark.parametrize("kind", ["named pipe", "backslash"])
async def test_inputs_that_cannot_be_read_or_stored_refuse_the_submit_once(
    tmp_path: Path, s3_url: str, kind: str
) -> None:
    """A named pipe among the inputs (never waited on), or a file whose name no key can
    spell: the submit is refused with one line naming it and the store, nothing restarts
    and no scenario is started."""
    make_scenario(tmp_path, init=design_turns(1), execute=[])
    on_bucket(tmp_path, s3_url)
    name = "data.fifo" if kind == "named pipe" else "notes\\draft.md"
    path = tmp_path / BASE / name
    if kind == "named pipe":
        os.mkfifo(path)
    else:
        path.write_text("a draft\n", encoding="utf-8")
    async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ={}):
        try:
            with anyio.fail_after(10), pytest.raises(ScenarioInputsError) as refused:
                await rt.ask("scheduler", StartScenario(scenario=NAME))
        finally:
            if kind == "named pipe":
                unblock(path)  # a reader blocked opening it (the bug) goes on
        counts = restarts(rt)
        known = await rt.ask("scheduler", ScenarioQuery(scenario=NAME))
    message = str(refused.value)
    assert ({"scheduler": 0, "init": 0, "execute": 0}, None) == (counts, known)
    assert 1 == len(message.splitlines())
    assert message.startswith(f"scenario {NAME!r} was not started: its inputs could not be")
    # The store's refusal shows the key as Python spells it, its backslash doubled.
    assert (True, True) == (f"{BASE}/{name.partition(chr(92))[0]}" in message, s3_url in message)


async def test_scripts_and_recordings_are_read_from_the_bucket_alone(
    tmp_path: Path, s3_url: str
) -> None:
    """A worker's offline model with nothing on its disk answers from the script and the
    scenario.toml in the bucket; a damaged script there is refused naming its key and line."""
    bucket = open_storage(s3_url, tmp_path)
    script = {"actors": {"init": ["Designing from the bucket's script."]}}
    for scenario, body in ((NAME, json.dumps(script)), ("deep", deep_script())):
        await bucket.write(f"scenarios/{scenario}/scenario.toml", SCRIPTED)
        await bucket.write(f"scenarios/{scenario}/s.json", body.encode())
    call = CallContext(actor="init", conversation=NAME, scenario=NAME, turn=0)
    with bind_call(call):
        reply = await OfflineModel(tmp_path, storage=bucket).create(PAYLOAD)
    deep = CallContext(actor="init", conversation="deep", scenario="deep", turn=0)
    with bind_call(deep), pytest.raises(ScriptFileError) as refused:
        await OfflineModel(tmp_path, storage=bucket).create(PAYLOAD)
    assert "Designing from the bucket's script." == reply.text
    assert str(refused.value).startswith("cannot load model script scenarios/deep/s.json: line 3")
    assert [] == [path async for path in anyio.Path(tmp_path).iterdir()]
