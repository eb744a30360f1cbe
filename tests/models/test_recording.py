"""Recordings: the store (append, torn lines, latest wins), the recording client, the replay
lookup by (actor, conversation, turn, purpose), precedence over the offline script, and the
offline submit of a scenario nothing can answer (docs/recordings.md)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from baton import Runtime
from baton._write_rules import never_written
from baton.context.payload import Payload
from baton.context.usage import Usage
from baton.models.errors import RecordingDivergedError, RecordingFileError
from baton.models.protocol import CallContext, ModelLimits, ModelResponse, bind_call
from baton.models.recording import (
    RECORDING_FILE,
    REPLAY_MODEL_NAME,
    RecordedReply,
    Recording,
    RecordingKey,
    RecordingModel,
    ReplayModel,
    append_reply,
    recording_key,
    recording_path,
)
from baton.pipeline.errors import NoScenarioModelError, RecordingNeedsKeyError
from baton.pipeline.host import open_pipeline
from baton.pipeline.messages import StartScenario
from baton.pipeline.model_source import model_source_line
from baton.pipeline.offline_model import OfflineModel
from baton.server import create_control_app

PAYLOAD: Payload = {"max_tokens": 64, "messages": [{"role": "user", "content": "go"}]}
THINKING = {"type": "thinking", "thinking": "weighing it", "signature": "c2ln.bWFj"}
TOOL_USE = {"type": "tool_use", "id": "toolu_01AbC", "name": "Read", "input": {"path": "a.md"}}


def reply(text: str, *, blocks: tuple[dict[str, Any], ...] = ()) -> ModelResponse:
    return ModelResponse(
        content=[*blocks, {"type": "text", "text": text}],
        stop_reason="tool_use" if blocks else "end_turn",
        usage=Usage(input_tokens=120, cache_read_input_tokens=30, output_tokens=9),
        model="claude-opus-5-5",
        latency_ms=812.5,
    )


def call(turn: int, *, conversation: str | None = "s1", actor: str = "init") -> CallContext:
    scenario = conversation.partition("@")[0] if conversation not in (None, "main") else None
    return CallContext(actor=actor, conversation=conversation, scenario=scenario, turn=turn)


def line(turn: int, text: str, *, conversation: str = "s1") -> RecordedReply:
    recorded = RecordedReply.of(call(turn, conversation=conversation), reply(text))
    assert recorded is not None
    return recorded


class FixedModel:
    """A model client answering every call with the next of its replies."""

    name = "claude-opus-5-5"

    def __init__(self, *replies: ModelResponse) -> None:
        self.replies = list(replies)

    async def create(self, payload: Payload) -> ModelResponse:
        return self.replies.pop(0)

    async def limits(self) -> ModelLimits:
        return ModelLimits(
            model=self.name, context_window=1000, max_output_tokens=100, source="config"
        )


def test_the_key_leaves_out_the_run_and_main_has_none() -> None:
    """A resubmission's `@2` is not part of the key; the main conversation has no key."""
    assert RecordingKey("init", "s1", 3, "turn") == recording_key(call(3, conversation="s1@2"))
    assert None is recording_key(call(0, conversation="main"))


def test_appended_replies_load_by_key_and_the_latest_of_a_key_wins(tmp_path: Path) -> None:
    """Two replies to turn 0 (a resumed run called again) and one to turn 1: the second reply
    to turn 0 is the one kept, and each reply comes back exactly as recorded."""
    path = tmp_path / RECORDING_FILE
    append_reply(path, line(0, "first try"))
    append_reply(path, line(1, "next"))
    append_reply(path, line(0, "second try", conversation="s1@2"))
    recording = Recording.load(path)
    assert 3 == len(path.read_bytes().splitlines())
    assert {("init", "s1", 0, "turn"), ("init", "s1", 1, "turn")} == set(recording.replies)
    kept = recording.reply(RecordingKey("init", "s1", 0, "turn"))
    assert kept is not None
    assert ("second try", 2) == (kept.response.text, kept.run)
    assert reply("next") == recording.replies[RecordingKey("init", "s1", 1, "turn")].response


def test_a_torn_last_line_is_ignored_and_cut_off_before_the_next_append(tmp_path: Path) -> None:
    """A killed run's unfinished last line does not stop the load, and the next append
    starts on a clean line."""
    path = tmp_path / RECORDING_FILE
    append_reply(path, line(0, "kept"))
    with path.open("ab") as file:
        file.write(b'{"format":"baton.recording/1","actor":"in')
    assert [RecordingKey("init", "s1", 0, "turn")] == list(Recording.load(path).replies)
    append_reply(path, line(1, "after the kill"))
    assert 2 == len(Recording.load(path).replies)
    assert all(json.loads(row) for row in path.read_bytes().splitlines())


def test_a_damaged_line_before_the_last_names_the_file_and_line(tmp_path: Path) -> None:
    """Damage that a kill cannot explain is refused, naming the line and what to do."""
    path = tmp_path / RECORDING_FILE
    append_reply(path, line(0, "a"))
    path.write_bytes(path.read_bytes() + b"not json\n")
    append_reply(path, line(1, "b"))
    with pytest.raises(RecordingFileError) as raised:
        Recording.load(path)
    assert f"recording {path} line 2 is not a recorded reply (not JSON)" in str(raised.value)


@pytest.mark.parametrize(
    ("response", "problem"),
    [
        ({"content": "hello"}, "response.content must be a list of blocks"),
        ({"content": [TOOL_USE | {"id": 7}]}, "response.content.0 needs string `id` and `name`"),
        ({"content": [{"type": "image"}]}, "response.content.0.type must be text, tool_use, "),
    ],
)
def test_a_recorded_reply_of_the_wrong_shape_names_the_file_and_line(
    tmp_path: Path, response: dict[str, Any], problem: str
) -> None:
    """A line whose reply is not a valid response (content not a list of blocks, a bad
    block) is a RecordingFileError naming the line when the file is read, not a TypeError."""
    path = tmp_path / RECORDING_FILE
    append_reply(path, line(0, "a"))
    bad = line(1, "b").model_dump(mode="json")
    bad["response"] |= response
    path.write_bytes(path.read_bytes() + json.dumps(bad).encode() + b"\n")
    with pytest.raises(RecordingFileError) as raised:
        Recording.load(path)
    assert str(raised.value).startswith(f"recording {path} line 2 is not a recorded reply (")
    assert problem in str(raised.value)


def test_a_recording_line_nested_too_deep_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    """A line of 100,000 nested arrays is a RecordingFileError naming the line, never the
    parser's RecursionError."""
    path = tmp_path / RECORDING_FILE
    append_reply(path, line(0, "a"))
    path.write_bytes(path.read_bytes() + b"[" * 100_000 + b"]" * 100_000 + b"\n")
    with pytest.raises(RecordingFileError) as raised:
        Recording.load(path)
    assert (
        f"recording {path} line 2 is not a recorded reply (arrays and objects nest more than "
        "100 levels deep)"
    ) in str(raised.value)


async def test_the_recording_client_stores_scenario_replies_whole_and_nothing_else(
    tmp_path: Path,
) -> None:
    """Thinking, tool_use id and input, stop_reason and usage are stored exactly; a reply in
    the main conversation is not recorded; no request header or key reaches the file."""
    answered = reply("reading", blocks=(THINKING, TOOL_USE))
    model = RecordingModel(FixedModel(answered, reply("main reply")), tmp_path)
    with bind_call(call(4, conversation="s1@3")):
        assert answered == await model.create(PAYLOAD)
    with bind_call(call(0, conversation="main")):
        await model.create(PAYLOAD)
    path = recording_path(tmp_path, "s1")
    text = await anyio.Path(path).read_text(encoding="utf-8")
    [row] = [json.loads(line) for line in text.splitlines()]
    assert {
        "format": "baton.recording/1",
        "actor": "init",
        "conversation": "s1",
        "turn": 4,
        "purpose": "turn",
        "scenario": "s1",
        "run": 3,
        "response": answered.model_dump(mode="json"),
    } == {key: value for key, value in row.items() if key != "recorded_at"}
    assert [path] == [p async for p in anyio.Path(tmp_path).rglob("*.jsonl")]
    assert "x-api-key" not in text


async def test_replay_answers_by_key_and_a_missing_key_names_the_call(tmp_path: Path) -> None:
    """The recorded reply comes back with its blocks, stop reason and usage (named
    `offline-replay`); a call the recording lacks raises one line naming actor, conversation,
    turn and how to re-record."""
    path = tmp_path / RECORDING_FILE
    recorded = RecordedReply.of(call(0), reply("reading", blocks=(THINKING, TOOL_USE)))
    assert recorded is not None
    append_reply(path, recorded)
    model = ReplayModel(Recording.load(path))
    with bind_call(call(0, conversation="s1@2")):
        got = await model.create(PAYLOAD)
    assert recorded.response.model_copy(update={"model": REPLAY_MODEL_NAME}) == got.model_copy(
        update={"latency_ms": recorded.response.latency_ms}
    )
    with bind_call(call(1, actor="execute")), pytest.raises(RecordingDivergedError) as raised:
        await model.create(PAYLOAD)
    assert (
        f"replay diverged: {path} has no reply for actor 'execute', conversation 's1', turn 1 "
        "(turn) — re-record it with ANTHROPIC_API_KEY set: `baton run --record --submit s1`"
    ) == str(raised.value)


def scenario(workspace: Path, name: str, *, script: bool, recording: bool) -> Path:
    folder = workspace / "scenarios" / name
    folder.mkdir(parents=True)
    toml = 'requirement = "r"\n' + ('offline_script = "script.json"\n' if script else "")
    (folder / "scenario.toml").write_text(toml, encoding="utf-8")
    if script:
        (folder / "script.json").write_text('{"actors": {"init": ["scripted"]}}')
    if recording:
        append_reply(folder / RECORDING_FILE, line(0, "recorded", conversation=name))
    return folder


async def test_a_recording_comes_before_the_offline_script(tmp_path: Path) -> None:
    """With both, the scenario replays its recording; with the script only, it is scripted;
    the banner line says which."""
    both = scenario(tmp_path, "both", script=True, recording=True)
    scenario(tmp_path, "scripted", script=True, recording=False)
    scenario(tmp_path, "bare", script=False, recording=False)
    offline = OfflineModel(tmp_path)
    with bind_call(call(0, conversation="both")):
        replayed = await offline.create(PAYLOAD)
    with bind_call(call(0, conversation="scripted")):
        scripted = await offline.create(PAYLOAD)
    assert ("recorded", "offline-replay") == (replayed.text, replayed.model)
    assert ("scripted", "offline-scripted") == (scripted.text, scripted.model)
    assert (both / RECORDING_FILE, None) == (offline.source_for("both"), offline.source_for("bare"))
    assert [
        "offline: replaying scenarios/both/recording.jsonl",
        "offline: scripted by scenarios/scripted/script.json",
        None,
    ] == [
        model_source_line(offline, tmp_path, name, record=False)
        for name in ("both", "scripted", "bare")
    ]


@asynccontextmanager
async def control(rt: Runtime) -> AsyncIterator[httpx2.AsyncClient]:
    app = create_control_app(rt, on_stop=lambda: None)
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://baton") as http:
        yield http


async def test_an_offline_submit_nothing_can_answer_is_refused_at_once(tmp_path: Path) -> None:
    """Offline, a scenario with neither recording nor script is refused at submit (409 over
    the control API, the error in process) and leaves no record; an unknown one stays 404."""
    scenario(tmp_path, "bare", script=False, recording=False)
    async with (
        Runtime.open(tmp_path) as rt,
        open_pipeline(rt, environ={}, require_scenario_model=True),
        control(rt) as http,
    ):
        with pytest.raises(NoScenarioModelError):
            await rt.ask("scheduler", StartScenario(scenario="bare"))
        answer = await http.post("/scenarios", json={"scenario": "bare"})
        unknown = await http.post("/scenarios", json={"scenario": "nonesuch"})
        listed = (await http.get("/scenarios")).json()
    assert (409, "NoScenarioModelError") == (answer.status_code, answer.json()["error"]["type"])
    assert answer.json()["error"]["message"].startswith(
        "scenario 'bare' has no model to run on: set ANTHROPIC_API_KEY, or record a run with "
        "`baton run --record --submit bare`"
    )
    assert (404, []) == (unknown.status_code, listed)


async def test_recording_without_an_api_key_is_refused(tmp_path: Path) -> None:
    """`record=True` offline stops before any agent starts."""
    async with Runtime.open(tmp_path) as rt:
        with pytest.raises(RecordingNeedsKeyError):
            async with open_pipeline(rt, environ={}, record=True):
                pass


def test_an_agent_may_not_write_its_scenarios_recording() -> None:
    """`Write` refuses `scenarios/<name>/recording.jsonl`: it is the user's input."""
    reason = never_written(("scenarios", "mini", "Recording.JSONL"))
    assert "'Recording.JSONL' in a scenario's folder is its user's input" == reason


COMPACTION = {
    "type": "compaction",
    "content": "The design has three parts.",
    "encrypted_content": "opaque",
    "signature": "c2ln.bWFj",
    "tool_changes": [],
}


def paused_reply() -> ModelResponse:
    return ModelResponse(
        content=[COMPACTION],
        stop_reason="compaction",
        usage=Usage(compaction_input_tokens=60_000, compaction_output_tokens=900),
        model="claude-opus-5-5",
        latency_ms=300.0,
        context_management={"applied_edits": []},
    )


async def test_a_compaction_pause_replays_before_the_reply_of_its_key(tmp_path: Path) -> None:
    """A pause and the reply that followed it at the same key are both kept: the replay
    answers with the pause (every field of its block, its usage and edits) until the request
    carries that block back, then with the reply."""
    path = tmp_path / RECORDING_FILE
    for response in (paused_reply(), reply("going on")):
        recorded = RecordedReply.of(call(5), response)
        assert recorded is not None
        append_reply(path, recorded)
    model = ReplayModel(Recording.load(path))
    messages: list[Any] = [{"role": "user", "content": "go"}]
    with bind_call(call(5)):
        first = await model.create({"max_tokens": 64, "messages": messages})
        back = {**COMPACTION, "cache_control": {"type": "ephemeral"}}
        sent: Any = {
            "max_tokens": 64,
            "messages": [*messages, {"role": "assistant", "content": [back]}],
        }
        second = await model.create(sent)
    assert paused_reply().model_copy(update={"model": REPLAY_MODEL_NAME}) == first.model_copy(
        update={"latency_ms": 300.0}
    )
    assert "going on" == second.text


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ([{"type": "text", "text": "a"}, COMPACTION], "a compaction block must come first"),
        ([COMPACTION, {"type": "text", "text": "a"}], 'stop_reason "compaction" is its compaction'),
    ],
)
def test_a_compaction_block_out_of_place_is_refused_at_load(
    tmp_path: Path, content: list[Any], problem: str
) -> None:
    """A compaction block after other blocks, or a compaction stop holding more than its
    block, is a RecordingFileError naming the line."""
    path = tmp_path / RECORDING_FILE
    bad = line(0, "a").model_dump(mode="json")
    bad["response"] |= {"content": content, "stop_reason": "compaction"}
    path.write_bytes(json.dumps(bad).encode() + b"\n")
    with pytest.raises(RecordingFileError) as raised:
        Recording.load(path)
    assert f"recording {path} line 1 is not a recorded reply (response.content: " in str(
        raised.value
    )
    assert problem in str(raised.value)
