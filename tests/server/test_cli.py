"""The `baton` CLI without a running process: usage errors, tail rendering, following."""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import pytest

from baton.agents.records import ContextCompacted, HandoffSent, ModelCall
from baton.runtime.token_records import MessageDeadLettered
from baton.server._render import fill_bar, render_record, token_log_table
from baton.server._tail import follow_lines
from baton.server.cli import main

MODEL_CALL: dict[str, Any] = {
    "ts": "2025-06-01T12:03:04.123456Z",
    "event": "model.call",
    "actor": "init",
    "scenario": "leave",
    "conversation": "c1",
    "model": "claude-opus-4-5",
    "input_tokens": 1234,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 10000,
    "output_tokens": 512,
    "context_tokens": 100_000,
    "context_window": 200_000,
    "compact_threshold": 150_000,
    "fill": 0.5,
    "latency_ms": 812.0,
    "stop_reason": "end_turn",
    "turn": 3,
    "purpose": "turn",
}
COMPACTED: dict[str, Any] = {
    "ts": "2025-06-01T12:03:09.000000Z",
    "event": "context.compacted",
    "actor": "execute",
    "scenario": "leave",
    "conversation": "c2",
    "tokens_before": 152_000,
    "tokens_after": 21_000,
    "kept_steps": 3,
    "summary_tokens": 900,
    "mode": "llm",
    "latency_ms": 1500.0,
}


def write_log(workspace: Path, *records: dict[str, Any]) -> Path:
    path = workspace / ".baton" / "logs" / "tokens.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def test_a_missing_command_is_a_one_line_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """`baton` alone exits 2 with one stderr line pointing at --help."""
    code = main([])
    err = capsys.readouterr().err
    assert (2, 1) == (code, len(err.splitlines()))
    assert "see `baton --help`" in err


def test_a_bad_argument_is_a_one_line_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """A missing required option exits 2 with one line naming it."""
    code = main(["reject", "leave"])
    err = capsys.readouterr().err
    assert (2, ["baton reject: error: the following arguments are required: --reason"]) == (
        code,
        [line.split(" — ")[0] for line in err.splitlines()],
    )


def test_a_payload_that_is_not_a_json_object_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """tell with a JSON array (or broken JSON) exits 2 before contacting any runtime."""
    codes = [
        main(["tell", "greeter", "Hello", "[1]", "--workspace", str(tmp_path)]),
        main(["ask", "greeter", "Hello", "{nope", "--workspace", str(tmp_path)]),
    ]
    err = capsys.readouterr().err.splitlines()
    assert ([2, 2], 2) == (codes, len(err))
    assert "must be a JSON object" in err[0]


def test_no_runtime_is_a_one_line_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """status against a workspace without a runtime exits 1 saying to start `baton run`, and
    prints what the workspace's files say (no scenario yet here)."""
    code = main(["status", "--workspace", str(tmp_path)])
    out, err = capsys.readouterr()
    expected = (
        f"baton status: error: no runtime in {tmp_path} — start one with "
        f"`baton run --workspace {tmp_path}`\n"
    )
    assert (1, expected) == (code, err)
    assert "baton is not running here; the workspace's files say:\nscenarios:\n  none\n" == out


def test_tail_without_a_log_says_where_it_looked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """tail on a workspace with no token log exits 1 naming the path it read."""
    code = main(["tail", "--workspace", str(tmp_path)])
    err = capsys.readouterr().err
    assert 1 == code
    assert str(tmp_path / ".baton" / "logs" / "tokens.jsonl") in err


def test_fill_bar_marks_the_compaction_threshold() -> None:
    """The bar fills to `fill` and carries `|` at the threshold's position."""
    assert "[##########-----|-----]" == fill_bar(0.5, 0.75)
    assert "[###############|#####]" == fill_bar(1.2, 0.75)


def test_a_model_call_renders_tokens_and_the_fill_bar() -> None:
    """A model.call line shows date and time, actor, model, the four token counts and the bar."""
    expected = (
        "2025-06-01 12:03:04  init        claude-opus-4-5     in 1,234  cache-write 0  "
        "cache-read 10,000  out 512  [##########-----|-----]  50% of 200,000"
    )
    assert expected == render_record(MODEL_CALL)


def test_a_compaction_renders_as_a_marker() -> None:
    """A context.compacted line shows before → after tokens and the mode."""
    expected = (
        "2025-06-01 12:03:09  execute     == compacted 152,000 -> 21,000 tokens (llm, "
        "3 steps kept, summary 900 tokens) =="
    )
    assert expected == render_record(COMPACTED)


def test_tail_prints_filters_and_passes_json_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """tail prints one readable line per record; --actor/--event filter; --json is verbatim."""
    path = write_log(tmp_path, MODEL_CALL, COMPACTED)
    ws = ["--workspace", str(tmp_path)]
    codes = [main(["tail", *ws])]
    readable = capsys.readouterr().out.splitlines()
    codes.append(main(["tail", "--json", "--actor", "execute", *ws]))
    by_actor = capsys.readouterr().out.splitlines()
    codes.append(main(["tail", "--json", "--event", "model", *ws]))
    by_event = capsys.readouterr().out.splitlines()
    lines = path.read_text().splitlines()
    assert [0, 0, 0] == codes
    assert [render_record(MODEL_CALL), render_record(COMPACTED)] == readable
    assert ([lines[1]], [lines[0]]) == (by_actor, by_event)


class Script:
    """A `sleep` for follow_lines that performs the next file action instead of waiting."""

    def __init__(self, *actions: Callable[[], None]) -> None:
        self.actions = list(actions)

    async def __call__(self, _: float) -> None:
        await anyio.lowlevel.checkpoint()
        if self.actions:
            self.actions.pop(0)()


def append(path: Path, text: str) -> Callable[[], None]:
    def act() -> None:
        with path.open("a") as handle:
            handle.write(text)

    return act


async def test_following_survives_rotation_truncation_and_partial_lines(tmp_path: Path) -> None:
    """follow_lines yields every line once, in order, across a rotation and a truncation."""
    path = tmp_path / "tokens.jsonl"
    path.write_text("1\n2\n")

    def rotate() -> None:
        with path.open("a") as handle:
            handle.write("3\n")  # written to the old file just before it is renamed
        path.rename(tmp_path / "tokens.jsonl.1")
        path.write_text("4\n")

    def truncate() -> None:
        path.write_text("")

    script = Script(
        append(path, '5\n{"half'),
        append(path, '": 1}\n'),
        rotate,
        lambda: None,
        truncate,
        append(path, "6\n"),
    )
    seen: list[str] = []
    with anyio.fail_after(5):
        async for line in follow_lines(path, interval=0, sleep=script):
            seen.append(line)
            if line == "6":
                break
    assert ["1", "2", "5", '{"half": 1}', "3", "4", "6"] == seen


async def test_following_waits_for_the_file_to_appear(tmp_path: Path) -> None:
    """follow_lines on a missing file waits until it exists, then reads it from the start."""
    path = tmp_path / "tokens.jsonl"
    script = Script(lambda: path.write_text("first\n"))
    with anyio.fail_after(5):
        lines = follow_lines(path, interval=0, sleep=script)
        first = await anext(lines)
        await lines.aclose()
    assert "first" == first


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    """`baton --version` exits 0 printing `baton <version>`."""
    code = main(["--version"])
    assert (0, f"baton {version('baton')}\n") == (code, capsys.readouterr().out)


def test_readme_documents_every_token_log_field() -> None:
    """README holds the token-log table exactly as generated from the record schema."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    table = token_log_table()
    fields = {
        name
        for model in (ModelCall, ContextCompacted, HandoffSent, MessageDeadLettered)
        for name in model.model_json_schema(by_alias=True)["properties"]
    }
    assert table in readme
    assert set() == {name for name in fields if f"| `{name}` |" not in table}


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (["worker", "--actors", "execute", "--mailbox", "sqlite"], 2, "over Redis: pass"),
        (["worker", "--actors", "scheduler", "--mailbox", "redis://h:1/0"], 2, "`baton run` only"),
        (["worker", "--actors", "executor", "--mailbox", "redis://h:1/0"], 2, "'executor'"),
        (["worker", "--actors", "execute", "--mailbox", "redis:/x"], 1, "runtime.mailbox"),
        (["run", "--actors", "scheduler", "--mailbox", "sqlite"], 1, "use a redis://"),
    ],
)
def test_scaling_out_needs_redis_and_known_actors(
    argv: list[str], code: int, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert code == main([*argv, "--workspace", str(tmp_path)])
    err = capsys.readouterr().err
    assert 1 == len(err.strip().splitlines()), err
    assert says in err


@pytest.mark.parametrize(
    "occupied", [".baton/control.sock", ".baton/baton.pid", ".baton/logs/tokens.jsonl"]
)
def test_a_directory_where_a_state_file_belongs_is_one_line(
    occupied: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`baton run` with a directory at the socket, pid file or token log exits 1 with one line
    naming the path and what to do, and no traceback."""
    (tmp_path / occupied).mkdir(parents=True)
    code = main(["run", "--exit-when-idle", "--workspace", str(tmp_path)])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("baton run: error:")]
    assert (1, False, 1) == (code, "Traceback" in err, len(errors))
    assert f"{tmp_path / occupied} is a directory" in errors[0]


@pytest.mark.parametrize(
    "line",
    [
        {"actor": ["x"]},
        {"event": "model.call", "actor": {"a": 1}, "input_tokens": "many"},
        {"event": ["model.call"], "ts": 5},
        {"event": "context.compacted", "ts": None, "tokens_before": [1]},
    ],
)
def test_tail_shows_a_record_of_the_wrong_shape_with_a_note(
    line: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A JSON object that is not a token-log record is printed raw behind a note, between
    the good records, and tail exits 0."""
    write_log(tmp_path, MODEL_CALL, line, COMPACTED)
    code = main(["tail", "--workspace", str(tmp_path)])
    out = capsys.readouterr().out.splitlines()
    assert (0, 3) == (code, len(out))
    assert [render_record(MODEL_CALL), render_record(COMPACTED)] == [out[0], out[2]]
    assert out[1].startswith("(not a token-log record: ")
    assert out[1].endswith(json.dumps(line))


def test_a_payload_with_a_lone_surrogate_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """tell/ask with `\\ud800` in the JSON exits 2 with one line naming the field, before
    contacting any runtime."""
    payload = '{"name": "\\ud800", "tags": ["ok", "a\\udfffb"]}'
    codes = [
        main(["tell", "greeter", "Hello", payload, "--workspace", str(tmp_path)]),
        main(["ask", "greeter", "Hello", payload, "--workspace", str(tmp_path)]),
    ]
    err = capsys.readouterr().err.splitlines()
    assert ([2, 2], 2) == (codes, len(err))
    assert "baton tell: error: the Hello payload is not valid Unicode at 'name'" in err[0]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["run", "--requirement", "r"], "--requirement goes with one --submit SCENARIO; add"),
        (
            ["run", "--submit", "a", "--submit", "b", "--requirement", "r"],
            "--requirement goes with one --submit SCENARIO; submit the others without it",
        ),
        (["run", "--auto-approve"], "--auto-approve goes with --submit SCENARIO"),
    ],
)
def test_run_options_that_need_a_submit_say_so_in_one_line(
    argv: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--requirement` takes exactly one `--submit`; `--auto-approve` at least one (usage
    errors: exit 2)."""
    assert 2 == main([*argv, "--workspace", str(tmp_path)])
    err = capsys.readouterr().err
    assert 1 == len(err.strip().splitlines()), err
    assert says in err
