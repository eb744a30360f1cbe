"""`baton tail` on a hand-written token log: -n, --since, --scenario, rotated files, the
date in each line, the separator before each scenario run, unknown --actor/--event."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest

from baton.server._render import render_record
from baton.server._since import parse_since
from baton.server._tail_command import TailOptions, tail
from baton.server.cli import main


def handoff(ts: str, actor: str, conversation: str | None, **extra: Any) -> dict[str, Any]:
    """A valid `handoff.sent` record of the scenario its conversation names."""
    scenario = conversation.partition("@")[0] if conversation else None
    return {
        "ts": ts,
        "event": "handoff.sent",
        "actor": actor,
        "scenario": scenario,
        "conversation": conversation,
        "handoff_type": "init_to_execute",
        "from": actor,
        "to": "execute",
        "package_tokens": 10,
        **extra,
    }


def restarted(ts: str, actor: str) -> dict[str, Any]:
    """A valid `actor.restarted` record (no scenario)."""
    return {
        "ts": ts,
        "event": "actor.restarted",
        "actor": actor,
        "scenario": None,
        "conversation": None,
        "restarts": 1,
        "backoff_ms": 5.0,
        "reason": "boom",
    }


OLDEST = handoff("2026-11-21T08:00:00.000000Z", "init", "leave")
OLD = restarted("2026-11-22T09:00:00.000000Z", "execute")
FIRST = handoff("2026-11-23T21:00:00.000000Z", "init", "leave")
OTHER = handoff("2026-11-23T21:30:00.000000Z", "init", "trip")
SECOND = handoff("2026-11-23T22:00:00.000000Z", "init", "leave@2")
LAST = handoff("2026-11-23T22:07:01.500000Z", "execute", "leave@2")


def write_logs(workspace: Path) -> Path:
    """The current file and two rotated ones, as the writer leaves them (`.2` oldest)."""
    logs = workspace / ".baton" / "logs"
    logs.mkdir(parents=True)
    files = {
        "tokens.jsonl.2": [OLDEST],
        "tokens.jsonl.1": [OLD],
        "tokens.jsonl": [FIRST, OTHER, SECOND, LAST],
    }
    for name, records in files.items():
        (logs / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    return logs / "tokens.jsonl"


def tail_out(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    """Exit code, stdout lines and stderr of `baton tail ARGS`."""
    code = main(["tail", *args])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err


def test_a_line_carries_the_date_and_the_time() -> None:
    """The time of a rendered record is `YYYY-MM-DD HH:MM:SS`, UTC as written."""
    assert render_record(LAST).startswith("2026-11-23 22:07:01  execute ")


def test_n_prints_the_last_matching_lines_across_rotated_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`-n 5` takes the last five records of all files, oldest first, rotated ones included;
    `-n 1 --actor execute` the last of that actor's."""
    write_logs(tmp_path)
    ws = ["--workspace", str(tmp_path)]
    five = tail_out(capsys, "-n", "5", "--json", *ws)
    one = tail_out(capsys, "-n", "1", "--json", "--actor", "execute", *ws)
    every_current = tail_out(capsys, "--json", *ws)
    assert (0, [json.dumps(r) for r in (OLD, FIRST, OTHER, SECOND, LAST)], "") == five
    assert (0, [json.dumps(LAST)], "") == one
    # Without -n or --since only the current file is read, as before.
    assert [json.dumps(r) for r in (FIRST, OTHER, SECOND, LAST)] == every_current[1]


def test_since_takes_a_time_or_a_duration(tmp_path: Path) -> None:
    """`--since` as an ISO time keeps records from then on (rotated files read too); a
    duration counts back from now."""
    now = datetime(2026, 11, 23, 22, 10, tzinfo=UTC)
    assert datetime(2026, 11, 23, 22, 0, tzinfo=UTC) == parse_since("10m", now=now)
    assert datetime(2026, 11, 22, 22, 10, tzinfo=UTC) == parse_since("1d", now=now)
    assert datetime(2026, 11, 23, 20, 10, tzinfo=UTC) == parse_since("2h", now=now)
    assert datetime(2026, 11, 22, 8, 0, tzinfo=UTC) == parse_since("2026-11-22T08:00:00")
    assert datetime(2026, 11, 22, 7, 0, tzinfo=UTC) == parse_since("2026-11-22T08:00:00+01:00")
    write_logs(tmp_path)
    out: list[str] = []
    since = parse_since("2026-11-22T00:00:00Z")
    anyio.run(tail, TailOptions(tmp_path, json=True, since=since), out.append)
    assert [json.dumps(r) for r in (OLD, FIRST, OTHER, SECOND, LAST)] == out


@pytest.mark.parametrize("value", ["yesterday", "10 parsecs", "-5m", "2026-13-01"])
def test_a_bad_since_is_a_one_line_usage_error(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --since that is neither a duration nor an ISO time exits 2 with one line."""
    code, out, err = tail_out(capsys, f"--since={value}", "--workspace", str(tmp_path))
    assert (2, [], 1) == (code, out, len(err.splitlines()))
    assert err.startswith("baton tail: error: argument --since: ")
    assert "30s, 10m, 2h, 1d" in err


def test_scenario_keeps_all_its_runs_or_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--scenario leave` keeps `leave` and `leave@2` records, not `trip`'s; `leave@2` only
    that run."""
    write_logs(tmp_path)
    ws = ["--workspace", str(tmp_path)]
    every = tail_out(capsys, "--json", "--scenario", "leave", *ws)
    second = tail_out(capsys, "--json", "--scenario", "leave@2", *ws)
    assert [json.dumps(r) for r in (FIRST, SECOND, LAST)] == every[1]
    assert [json.dumps(r) for r in (SECOND, LAST)] == second[1]


def test_a_separator_line_starts_each_scenario_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The readable tail prints `---- NAME run N (conversation) ----` before the first
    record of each scenario run it shows; --json prints none."""
    write_logs(tmp_path)
    code, out, _ = tail_out(capsys, "--workspace", str(tmp_path))
    assert 0 == code
    assert [
        "---- leave run 1 (leave) ----",
        render_record(FIRST),
        "---- trip run 1 (trip) ----",
        render_record(OTHER),
        "---- leave run 2 (leave@2) ----",
        render_record(SECOND),
        render_record(LAST),
    ] == out


def test_unknown_event_or_actor_is_one_line_naming_the_known_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An --event the schema does not know and an --actor neither configured nor in the log
    (rotated files included) exit 2 with one line listing the known ones."""
    write_logs(tmp_path)
    (tmp_path / "baton.toml").write_text('[actors.reviewer]\nmodel = "claude-haiku-5-5"\n')
    ws = ["--workspace", str(tmp_path)]
    event = tail_out(capsys, "--event", "model.cal", *ws)
    actor = tail_out(capsys, "--actor", "nobody", *ws)
    configured = tail_out(capsys, "--actor", "reviewer", *ws)
    assert (2, [], 1) == (event[0], event[1], len(event[2].splitlines()))
    assert event[2].startswith(
        "baton tail: error: unknown event 'model.cal' — known: actor.restarted, "
        "context.compacted, context.compaction_ineffective, context.tool_result_truncated, "
        "handoff.received, handoff.sent, iteration.ended, memory.recalled, "
        "message.dead_lettered, model.call, "
    )
    assert "or a family: actor, context, handoff, iteration, memory, message, model" in event[2]
    assert (2, [], 1) == (actor[0], actor[1], len(actor[2].splitlines()))
    assert (
        "baton tail: error: unknown actor 'nobody' — known: execute, init, reviewer, scheduler "
        "(the configured actors and those in the token log)\n"
    ) == actor[2]
    assert (0, []) == configured[:2]


def test_an_actor_seen_only_in_a_rotated_file_is_known(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An actor that is not configured but wrote records (a user's actor) is accepted."""
    logs = write_logs(tmp_path).parent
    custom = restarted("2026-11-20T08:00:00.000000Z", "greeter")
    (logs / "tokens.jsonl.3").write_text(json.dumps(custom) + "\n")
    code, out, err = tail_out(
        capsys, "-n", "10", "--actor", "greeter", "--json", "--workspace", str(tmp_path)
    )
    assert (0, [json.dumps(custom)], "") == (code, out, err)


class Lines:
    """The printed lines, with a wait for the n-th."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._added = anyio.Event()

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        self._added.set()
        self._added = anyio.Event()

    async def wait_for(self, count: int) -> None:
        while len(self.lines) < count:
            await self._added.wait()


async def test_following_with_n_prints_the_last_lines_then_new_ones(tmp_path: Path) -> None:
    """`-f -n 2` prints the last two matching records of the history, then each new one."""
    path = write_logs(tmp_path)
    out = Lines()
    fresh = handoff("2026-11-23T22:09:00.000000Z", "init", "leave@2")
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(tail, TailOptions(tmp_path, follow=True, json=True, lines=2), out)
            await out.wait_for(2)
            with path.open("a") as handle:
                handle.write(json.dumps(fresh) + "\n")
            await out.wait_for(3)
            tg.cancel_scope.cancel()
    assert [json.dumps(r) for r in (SECOND, LAST, fresh)] == out.lines


def test_an_unknown_scenario_is_a_usage_error_naming_the_one_it_probably_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--scenario` naming neither a folder of `scenarios/` nor a scenario in the log (rotated
    files included) exits 2 with one line naming the known ones and the likely one; a known
    one (a folder, or only in an old file) is tailed."""
    write_logs(tmp_path)
    (tmp_path / "scenarios" / "trip_request").mkdir(parents=True)
    ws = ["--workspace", str(tmp_path)]
    typo = tail_out(capsys, "--scenario", "trip_reqest", *ws)
    nothing = tail_out(capsys, "--scenario", "nosuch", *ws)
    folder = tail_out(capsys, "--scenario", "trip_request", *ws)
    assert (2, 2, 0) == (typo[0], nothing[0], folder[0])
    assert "unknown scenario 'trip_reqest' — did you mean 'trip_request'? — known: " in typo[2]
    assert "did you mean" not in nothing[2]
    assert 1 == len(nothing[2].splitlines())
