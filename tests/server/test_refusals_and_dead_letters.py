"""Against a real runtime (the pipeline on the offline model, a user's actor, the control
server on its socket) driven by the `baton` CLI: refused requests are one-line errors and
never dead letters; `baton dead-letters` lists what was given up on; `baton show` and
`baton status` show a pending handoff with its design files and the commands; a damaged
scenario record is named by every command that touches it and listed by `baton status`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
import structlog
from anyio.from_thread import BlockingPortal, start_blocking_portal
from control_actors import Greeter, quick_policy
from pydantic import BaseModel

from baton import Actor, handler
from baton.errors import UsageError
from baton.pipeline.config import load_config
from baton.pipeline.host import open_pipeline
from baton.pipeline.packages import InitToExecuteContext
from baton.pipeline.scenario import PendingHandoff, ScenarioConfig, ScenarioRecord
from baton.runtime import Runtime
from baton.server import ControlServer, create_control_app
from baton.server._approvals import decide_commands
from baton.server.cli import main


class Refuse(BaseModel):
    why: str


class Picky(Actor):
    """Refuses every `Refuse` as the sender's mistake."""

    @handler
    async def refuse(self, msg: Refuse) -> None:
        raise UsageError(f"refused: {msg.why}")


PACKAGE = InitToExecuteContext(
    timestamp="2026-11-23T22:00:00Z",
    user_requirement="Handle leave applications.",
    design_artifacts={
        "unified_scenario_design_path": "scenarios/leave/design/unified.md",
        "business_rules_path": "scenarios/leave/design/rules.json",
    },
    design_rationale="Two checkers, one per rule family.",
)


def saved_scenario(
    workspace: Path, name: str, phase: str, *, pending: bool = False, run: int = 1
) -> None:
    """A scenario record as the Scheduler saves it, read back when it starts."""
    record = ScenarioRecord(
        scenario=name,
        run=run,
        requirement="Handle leave applications.",
        phase=phase,  # type: ignore[arg-type]
        iteration=1,
        config=ScenarioConfig(name=name, requirement="Handle leave applications."),
        pending=PendingHandoff(handoff_id="h-1", package=PACKAGE) if pending else None,
    )
    path = workspace / ".baton" / "scheduler" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(record.model_dump_json(indent=2))


@asynccontextmanager
async def real_runtime(workspace: Path, mailbox: str) -> AsyncIterator[Runtime]:
    config = load_config(workspace, environ={}, overrides={"runtime": {"mailbox": mailbox}})
    async with (
        Runtime.open(workspace, config=config, policy=quick_policy()) as runtime,
        open_pipeline(runtime, environ={}),
    ):
        await runtime.spawn("greeter", Greeter)
        await runtime.spawn("picky", Picky)
        async with ControlServer.open(runtime):
            yield runtime


async def dead_letters_reach(runtime: Runtime, count: int) -> None:
    with anyio.fail_after(10):
        await runtime.dead_letters.wait_total(count)


@contextmanager
def running(workspace: Path, mailbox: str) -> Iterator[tuple[BlockingPortal, Runtime]]:
    """A runtime served in a thread of its own, so the CLI can run here."""
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(real_runtime(workspace, mailbox)) as runtime,
    ):
        yield portal, runtime


@pytest.fixture(autouse=True)
def quiet_runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The runtime shares this process with the CLI: its log lines are captured, not
    printed, so stdout and stderr hold what the commands print (the CLI's own logging set-up
    would send the runtime's lines to the command's stderr)."""
    monkeypatch.setattr("baton.runtime.logging.configure_logging", lambda **_: None)
    with structlog.testing.capture_logs():
        yield


def baton(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


REFUSED = [
    ("approve", "ghost"),
    ("reject", "ghost", "--reason", "no"),
    ("approve", "done"),
    ("reject", "done", "--reason", "no"),
    ("show", "ghost"),
    ("tell", "greeter", "Nope", "{}"),
    ("ask", "greeter", "Nope", "{}"),
    ("tell", "greeter", "Hello", '{"name": 5}'),
    ("ask", "greeter", "Hello", '{"nme": "a"}'),
    ("ask", "scheduler", "StartScenario", '{"scenario": "ghost"}'),
    ("submit", "ghost"),
    ("submit", "broken"),
    ("submit", ".."),
    ("ask", "picky", "Refuse", '{"why": "bad request"}'),
    ("ask", "init", "Refuse", "{}"),
]


@pytest.mark.parametrize("mailbox", ["memory", "sqlite"])
def test_refused_requests_are_one_line_errors_and_never_dead_letters(
    mailbox: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Approve/reject with nothing pending or no such scenario, tell/ask of a type the actor
    does not take or a bad payload, a bad submit, an ask its handler refuses: each exits
    non-zero with one line on stderr, and the dead letters stay at 0."""
    saved_scenario(tmp_path, "done", "completed")
    broken = tmp_path / "scenarios" / "broken"
    broken.mkdir(parents=True)
    (broken / "scenario.toml").write_text("requirement = [unclosed\n")
    ws = ("--workspace", str(tmp_path))
    with running(tmp_path, mailbox) as (_, runtime):
        answers = {" ".join(args): baton(capsys, *args, *ws) for args in REFUSED}
        dead_letters = runtime.dead_letters.total
    assert 0 == dead_letters
    wrong = {cmd: answer for cmd, answer in answers.items() if answer[0] == 0 or answer[1]}
    assert {} == wrong
    assert dict.fromkeys(answers, 1) == {
        cmd: len(err.splitlines()) for cmd, (_, _, err) in answers.items()
    }
    assert answers["approve done"][2].startswith(
        "baton approve: error: scenario 'done' has no handoff awaiting approval (it is completed)"
    )
    assert "refused: bad request" in answers['ask picky Refuse {"why": "bad request"}'][2]
    assert "broken" in answers["submit broken"][2]


@pytest.mark.parametrize("mailbox", ["memory", "sqlite"])
def test_dead_letters_lists_what_was_given_up_on_newest_last(
    mailbox: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two told messages the actor refuses become dead letters; `baton dead-letters` prints
    one line each (date and time, actor, type, reason, body size and hash), newest last;
    `-n 1` only the newest; `--json` the API's list."""
    ws = ("--workspace", str(tmp_path))
    with running(tmp_path, mailbox) as (portal, runtime):
        before = baton(capsys, "dead-letters", *ws)
        for why in ("first", "second"):
            assert 0 == baton(capsys, "tell", "picky", "Refuse", json.dumps({"why": why}), *ws)[0]
        portal.call(dead_letters_reach, runtime, 2)
        listed = baton(capsys, "dead-letters", *ws)
        newest = baton(capsys, "dead-letters", "-n", "1", *ws)
        as_json = baton(capsys, "dead-letters", "--json", *ws)
    assert (0, "no dead letters\n", "") == before
    lines = listed[1].splitlines()
    assert 3 == len(lines)
    assert "2 shown of 2 kept (2 dead-lettered since start)" == lines[-1]
    date, time, actor, message_type, *reason = lines[1].split()
    assert ("picky", "Refuse") == (actor, message_type)
    assert [4, 2, 2] == [len(part) for part in date.split("-")]
    assert 8 == len(time)
    assert "refused: UsageError: refused: second" in " ".join(reason)
    assert "(16 bytes, sha256 " in lines[1]  # {"why":"second"}
    assert [lines[1], "1 shown of 2 kept (2 dead-lettered since start)"] == newest[1].splitlines()
    body = json.loads(as_json[1])
    assert (2, 2) == (body["total"], body["kept"])
    assert ['{"why":"first"}', '{"why":"second"}'] == [
        letter["excerpt"] for letter in body["letters"]
    ]


def test_a_bad_limit_is_a_one_line_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`baton dead-letters -n 0` exits 2 with one line, before any request."""
    code, out, err = baton(capsys, "dead-letters", "-n", "0", "--workspace", str(tmp_path))
    assert (2, "", 1) == (code, out, len(err.splitlines()))


def test_show_and_status_name_the_pending_package_and_the_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A scenario awaiting approval: `baton show` and `baton status` print the package's
    summary, its design files and the exact approve and reject commands; a scenario with
    nothing pending says so."""
    saved_scenario(tmp_path, "leave", "awaiting_approval", pending=True)
    saved_scenario(tmp_path, "done", "completed")
    ws = ("--workspace", str(tmp_path))
    with running(tmp_path, "memory"):
        shown = baton(capsys, "show", "leave", *ws)
        status = baton(capsys, "status", *ws)
        nothing = baton(capsys, "show", "done", *ws)
    flag = f"--workspace {tmp_path}"
    pending = [
        "  handoff h-1 (init_to_execute)",
        "  summary: Two checkers, one per rule family.",
        "  design files:",
        "    business_rules_path           scenarios/leave/design/rules.json",
        "    unified_scenario_design_path  scenarios/leave/design/unified.md",
        f"  approve: baton approve leave {flag}",
        f'  reject:  baton reject leave --reason "..." {flag}',
    ]
    assert (0, "") == (shown[0], shown[2])
    assert [
        "leave: awaiting_approval (iteration 1)",
        "run: 1",
        "requirement: Handle leave applications.",
        "awaiting approval:",
        *pending,
    ] == shown[1].splitlines()
    status_lines = status[1].splitlines()
    start = status_lines.index("awaiting approval: leave (iteration 1)")
    assert pending == status_lines[start + 1 : start + 1 + len(pending)]
    assert "nothing is pending: no handoff awaits approval" == nothing[1].splitlines()[-1]


def test_show_says_which_run_it_shows_and_where_the_earlier_ones_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A scenario on its third run: `baton show` says run 3 and lists runs 1 and 2 kept
    under its `runs/` folder (a later or unnumbered folder there is no earlier run);
    `--json` carries the run."""
    saved_scenario(tmp_path, "done", "completed", run=3)
    runs = tmp_path / "scenarios" / "done" / "runs"
    for name in ("2", "1", "3", ".4.partial", "old"):
        (runs / name).mkdir(parents=True)
    ws = ("--workspace", str(tmp_path))
    with running(tmp_path, "memory"):
        shown = baton(capsys, "show", "done", *ws)
        as_json = baton(capsys, "show", "done", "--json", *ws)
    assert f"run: 3 (earlier runs kept in {runs}/1, 2)" == shown[1].splitlines()[1]
    assert 3 == json.loads(as_json[1])["run"]


def test_the_commands_name_the_workspace_only_when_one_was_given() -> None:
    """Run from the workspace, the approve/reject commands carry no `--workspace`; given a
    path with a space, they carry it quoted for the shell."""
    assert ("baton approve leave", 'baton reject leave --reason "..."') == decide_commands(
        "leave", "."
    )
    assert (
        "baton approve leave --workspace 'work/my ws'",
        "baton reject leave --reason \"...\" --workspace 'work/my ws'",
    ) == decide_commands("leave", "work/my ws")


def test_a_damaged_scenario_record_is_named_by_every_command_and_listed_in_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A `.baton/scheduler/leave.json` that is not JSON: `baton approve`, `reject`, `show`
    and `submit` each exit 1 with one line naming the file, what is wrong and to move it
    aside (not "submit it first"); `baton status` lists it with the fix, `--json` too."""
    record = tmp_path / ".baton" / "scheduler" / "leave.json"
    record.parent.mkdir(parents=True)
    record.write_text('{"scenario": "leave", ')
    ws = ("--workspace", str(tmp_path))
    with running(tmp_path, "memory") as (_, runtime):
        answers = {
            command: baton(capsys, *args, *ws)
            for command, args in {
                "approve": ("approve", "leave"),
                "reject": ("reject", "leave", "--reason", "no"),
                "show": ("show", "leave"),
                "submit": ("submit", "leave", "--requirement", "r"),
            }.items()
        }
        status = baton(capsys, "status", *ws)
        as_json = json.loads(baton(capsys, "status", "--json", *ws)[1])
        dead_letters = runtime.dead_letters.total
    fix = f"move it aside (e.g. `mv {record} {record}.damaged`) and submit 'leave' again"
    for command, (code, out, err) in answers.items():
        assert (command, 1, "", 1) == (command, code, out, len(err.splitlines()))
        assert err.startswith(f"baton {command}: error: {record} is not JSON (")
        assert fix in err
    assert 0 == dead_letters
    lines = status[1].splitlines()
    start = lines.index("damaged record: leave (refused until the file is moved aside)")
    assert lines[start + 1].startswith(f"  {record} is not JSON (")
    assert lines[start + 2].startswith(f"  what to do: {fix}")
    [damaged] = as_json["damaged_scenarios"]
    assert ("leave", str(record)) == (damaged["scenario"], damaged["path"])
    assert damaged["problem"].startswith("is not JSON (")
    assert damaged["fix"].startswith(fix)


async def test_deciding_a_damaged_scenario_over_http_is_409_naming_the_file(
    tmp_path: Path,
) -> None:
    """`POST /scenarios/{name}/approve` of a scenario whose record is damaged answers 409
    `DamagedScenarioError` with the file, the problem and the fix in its body."""
    record = tmp_path / ".baton" / "scheduler" / "leave.json"
    record.parent.mkdir(parents=True)
    record.write_bytes(b"")
    async with real_runtime(tmp_path, "memory") as runtime:
        app = create_control_app(runtime, on_stop=lambda: None)
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://baton") as http:
            response = await http.post("/scenarios/leave/approve")
    error = response.json()["error"]
    assert (409, "DamagedScenarioError") == (response.status_code, error["type"])
    assert error["message"].startswith(f"{record} is empty — move it aside")
    assert (str(record), "is empty", "leave") == (
        error["details"]["path"],
        error["details"]["problem"],
        error["details"]["scenario"],
    )
