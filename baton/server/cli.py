"""The `baton` command line (README.md, "Running baton"; docs/architecture.md, "server/").

Exit codes: 0 success, 1 failure (any baton error: no runtime, unknown actor, a timeout...),
2 usage (the command line itself is wrong). An error is one line on stderr saying what to do.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from baton.runtime.log_files import PROCESS_LOG
from baton.server._command_logging import LIGHT_COMMANDS, CommandLogging
from baton.server._message_command import message_commands
from baton.server._since import SINCE_HELP, parse_since
from baton.server._wire import WireError

if TYPE_CHECKING:
    from baton.runtime.logging import LogFile
    from baton.server.client import Client

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

Command = Callable[[argparse.Namespace], Awaitable[None]]
E = TypeVar("E", bound=BaseException)
LightCommand = Callable[[argparse.Namespace], None]
"""`baton tell` and `baton ask`: run without an event loop (`_message_command.py`)."""


class _Parser(argparse.ArgumentParser):
    """argparse, reporting a usage error as one line (exit 2) instead of usage + error."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message} — see `{self.prog} --help`\n")
        raise SystemExit(EXIT_USAGE)


class _Version(argparse.Action):
    """`--version`, reading the installed version only when asked: importing
    `importlib.metadata` would cost every command about 30 ms."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS) -> None:
        super().__init__(
            option_strings,
            dest=dest,
            default=argparse.SUPPRESS,
            nargs=0,
            help="show program's version number and exit",
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> NoReturn:
        from importlib.metadata import version  # noqa: PLC0415 - see the docstring

        sys.stdout.write(f"baton {version('baton')}\n")
        parser.exit()


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of lines") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give 0 or more lines")
    return value


def _limit(text: str) -> int:
    from baton.server._dead_letter_models import MAX_LIMIT as MAX_DEAD_LETTERS  # noqa: PLC0415

    value = _count(text)
    if not 1 <= value <= MAX_DEAD_LETTERS:
        raise argparse.ArgumentTypeError(f"{text!r}: give 1 to {MAX_DEAD_LETTERS}")
    return value


def _since(text: str) -> datetime:
    try:
        return parse_since(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _scenario(text: str) -> str:
    """A scenario name the command line takes: refused here, in one line, when it breaks the
    rule (not by the runtime, in a traceback or an HTTP error)."""
    from baton.pipeline.errors import InvalidScenarioNameError  # noqa: PLC0415
    from baton.pipeline.scenario_names import check_scenario_name  # noqa: PLC0415

    try:
        return check_scenario_name(text)
    except InvalidScenarioNameError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _print(text: str) -> None:
    print(text, flush=True)  # noqa: T201 - the CLI's output


# --- commands ------------------------------------------------------------------------------
# Each command imports what only it uses: `baton status` must not pay for the runtime, `baton
# tell` (`_message_command.py`) not even for the client (docs/architecture.md, "What a
# command imports").


def _connect(args: argparse.Namespace) -> Client:
    from baton.server.client import Client  # noqa: PLC0415 - httpx2: not for tell and ask

    return Client(args.workspace)


async def _run(args: argparse.Namespace) -> None:
    # Imported here: the server side (FastAPI, uvicorn) is needed by `run` alone.
    from baton.server._run import RunOptions, run  # noqa: PLC0415

    options = RunOptions(
        workspace=Path(args.workspace),
        submit=tuple(args.submit or ()),
        requirement=args.requirement,
        exit_when_idle=args.exit_when_idle,
        auto_approve=args.auto_approve,
        actors=tuple(args.actor),
        mailbox=args.mailbox,
        storage=args.storage,
        roles=_role_list(args.actors) if args.actors else None,
        json_logs=args.log_format == "json",
        record=args.record,
    )
    await run(options, sys.stdout)


def _role_list(specs: list[str]) -> tuple[str, ...]:
    return tuple(name.strip() for spec in specs for name in spec.split(",") if name.strip())


async def _worker(args: argparse.Namespace) -> None:
    # Imported here, as for `run`: only this command needs the pipeline.
    from baton.server._worker import WorkerOptions, work  # noqa: PLC0415

    options = WorkerOptions(
        workspace=Path(args.workspace),
        actors=_role_list(args.actors),
        mailbox=args.mailbox,
        storage=args.storage,
    )
    await work(options, sys.stdout)


async def _submit(args: argparse.Namespace) -> None:
    from baton.server._render import render_scenario  # noqa: PLC0415

    async with _connect(args) as client:
        state = await client.submit(
            args.scenario, args.requirement, auto_approve=True if args.auto_approve else None
        )
        _print(render_scenario(state))


async def _new(args: argparse.Namespace) -> None:
    # Imported here, as for `run`: only this command writes a scenario folder.
    import anyio  # noqa: PLC0415

    from baton.pipeline.scenario_scaffold import new_scenario_command  # noqa: PLC0415

    _print(await anyio.to_thread.run_sync(new_scenario_command, args.workspace, args.scenario))


async def _status(args: argparse.Namespace) -> None:
    from baton.server._render import render_status  # noqa: PLC0415
    from baton.server.errors import NoRuntimeError  # noqa: PLC0415

    try:
        async with _connect(args) as client:
            report = await client.status()
    except NoRuntimeError:
        # Nothing answers: what is on disk as well (README.md, "Running baton"); the exit
        # status and the error line still say it is not running.
        from baton.server._status_offline import offline_status  # noqa: PLC0415

        _print(await offline_status(args.workspace, as_json=args.json))
        raise
    _print(report.model_dump_json(indent=2) if args.json else render_status(report, args.workspace))


async def _show(args: argparse.Namespace) -> None:
    import anyio  # noqa: PLC0415

    from baton._write_rules import SCENARIOS_DIR  # noqa: PLC0415
    from baton.pipeline.run_archive import earlier_runs  # noqa: PLC0415
    from baton.server._approvals import render_show  # noqa: PLC0415

    async with _connect(args) as client:
        state = await client.scenario(args.scenario)
    if args.json:
        _print(state.model_dump_json(indent=2))
        return
    # Read where the command runs: the runtime shares the workspace's folder with it.
    kept = await anyio.to_thread.run_sync(
        earlier_runs, Path(args.workspace, SCENARIOS_DIR, state.scenario)
    )
    _print(render_show(state, args.workspace, [run for run in kept if run < state.run]))


async def _dead_letters(args: argparse.Namespace) -> None:
    from baton.server._dead_letter_models import render_dead_letters  # noqa: PLC0415

    async with _connect(args) as client:
        listing = await client.dead_letters(args.lines)
    _print(listing.model_dump_json(indent=2) if args.json else render_dead_letters(listing))


async def _approve(args: argparse.Namespace) -> None:
    from baton.server._render import render_scenario  # noqa: PLC0415

    async with _connect(args) as client:
        _print(render_scenario(await client.approve(args.scenario)))


async def _reject(args: argparse.Namespace) -> None:
    from baton.server._render import render_scenario  # noqa: PLC0415

    async with _connect(args) as client:
        _print(render_scenario(await client.reject(args.scenario, args.reason)))


async def _stop(args: argparse.Namespace) -> None:
    async with _connect(args) as client:
        pid = (await client.health()).pid
        await client.stop()
    _print(f"stopped the runtime in {args.workspace} (pid {pid})")


async def _report(args: argparse.Namespace) -> None:
    import anyio  # noqa: PLC0415

    from baton.server._report_command import write_report  # noqa: PLC0415

    workspace = Path(args.workspace)
    out = None if args.out is None else Path(args.out)
    read = None
    if args.mailbox is not None:
        from baton.server._report_command import stream_read  # noqa: PLC0415
        from baton.server._tail_command import redis_source  # noqa: PLC0415

        url, prefix = await anyio.to_thread.run_sync(
            redis_source, workspace, args.mailbox, "report"
        )
        read = await stream_read(url, prefix)
    written = await anyio.to_thread.run_sync(
        lambda: write_report(workspace, args.scenario, out, read=read)
    )
    _print(str(written))


async def _cost(args: argparse.Namespace) -> None:
    # Imported here: only this command replays journals (the agents' and the pipeline's code).
    from baton.server._cost_command import CostOptions, cost  # noqa: PLC0415

    options = CostOptions(
        workspace=Path(args.workspace),
        what_if=args.what_if,
        scenario=args.scenario,
        json=args.json,
        mailbox=args.mailbox,
    )
    await cost(options, _print)


async def _pull(args: argparse.Namespace) -> None:
    # Imported here: only this command opens the store (and, for s3://, its client).
    from baton.server._pull_command import PullOptions, pull  # noqa: PLC0415

    options = PullOptions(
        workspace=Path(args.workspace),
        scenario=args.scenario,
        into=Path(args.dir),
        storage=args.storage,
        force=args.force,
    )
    await pull(options, _print)


async def _tail(args: argparse.Namespace) -> None:
    from baton.server._tail_command import TailOptions, tail  # noqa: PLC0415

    options = TailOptions(
        workspace=Path(args.workspace),
        follow=args.follow,
        json=args.json,
        lines=args.lines,
        actor=args.actor,
        event=args.event,
        scenario=args.scenario,
        since=args.since,
        mailbox=args.mailbox,
    )
    await tail(options, _print)


# --- parser --------------------------------------------------------------------------------


def _tail_arguments(tail: argparse.ArgumentParser) -> None:
    tail.add_argument("-f", "--follow", action="store_true", help="keep printing new records")
    tail.add_argument(
        "-n",
        "--lines",
        type=_count,
        metavar="N",
        help="only the last N matching lines (then follow, with -f); reads rotated files too",
    )
    tail.add_argument(
        "--since",
        type=_since,
        metavar="WHEN",
        help=f"only records from WHEN on: {SINCE_HELP}; reads rotated files too",
    )
    tail.add_argument("--actor", metavar="A", help="only this actor's records")
    tail.add_argument("--event", metavar="E", help="only this event, or family (handoff)")
    tail.add_argument(
        "--scenario",
        metavar="NAME",
        help="only this scenario's records, all its runs (NAME, NAME@2, ...); NAME@2: one run",
    )
    tail.add_argument("--json", action="store_true", help="print the JSON lines as written")
    tail.add_argument(
        "--mailbox",
        metavar="redis://HOST:PORT/DB",
        help="read every process's lines from the deployment's Redis stream, not this "
        "host's file (see docs/token-log.md, Across processes)",
    )


def _log_format_argument(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--log-format",
        choices=("file", "json"),
        default="file",
        help=f"where the JSON log lines go: file (default: {PROCESS_LOG} in the workspace, "
        "rotated) or json (stderr, for machines; `baton run` then shows no live panel)",
    )


def _log_file(args: argparse.Namespace) -> LogFile | None:
    # `baton run` and `baton worker` keep their log out of the terminal (README.md, "Running
    # baton"); a workspace that is not a directory is reported by the command itself, and
    # must not be created by its first log line.
    if getattr(args, "log_format", "json") != "file" or not Path(args.workspace).is_dir():
        return None
    if args.name == "worker":
        from baton.server._worker import logs_on_stderr  # noqa: PLC0415 - as in _worker

        # A worker that keeps no files logs on stderr (docs/storage.md, "A worker's own
        # directory").
        if logs_on_stderr(Path(args.workspace), args.mailbox, args.storage):
            return None
    from baton.runtime.logging import LogFile  # noqa: PLC0415 - see _command_logging

    return LogFile(Path(args.workspace) / PROCESS_LOG)


REPORT_HELP = (
    "write one self-contained HTML page of the token log (rotated files included): context "
    "per call against threshold and window for each agent, compactions, handoffs and "
    "approvals, tokens and estimated cost per agent and model; prints its path (works "
    "without a running runtime)"
)


def _report_arguments(report: argparse.ArgumentParser) -> None:
    report.add_argument(
        "--scenario",
        metavar="S",
        help="only this scenario: its latest run, with a page per run beside it; S@2: its "
        "second run (default: the whole log)",
    )
    report.add_argument(
        "--out",
        metavar="FILE",
        help="where to write it (default: .baton/reports/<S or all>.html in the workspace)",
    )
    report.add_argument(
        "--mailbox",
        metavar="redis://HOST:PORT/DB",
        help="draw every process's lines from the deployment's Redis stream, not this host's "
        "file (see docs/token-log.md, Across processes)",
    )


COST_HELP = (
    "what a run's model calls billed, per agent, priced at the agent's model (an offline "
    "run at its configured one); with --what-if, what the same run would have billed under "
    "other context policies and cache lifetimes (works without a running runtime)"
)


def _cost_arguments(cost: argparse.ArgumentParser) -> None:
    cost.add_argument(
        "--what-if",
        action="store_true",
        help="replay the run's journal under each context policy (keep all, per-turn strip, "
        "each strategy, server compaction and clearing), under 5-minute and 1-hour caches",
    )
    cost.add_argument(
        "--scenario",
        metavar="S",
        help="only this scenario's runs; S@2: its second run (default: every run in the journal)",
    )
    cost.add_argument("--json", action="store_true", help="print the bills as JSON")
    cost.add_argument(
        "--mailbox",
        metavar="redis://HOST:PORT/DB",
        help="the deployment's journals and every process's token-log lines, from its Redis "
        "(see docs/token-log.md, Across processes)",
    )


STORAGE_HELP = (
    "where the workspace's files are kept, overriding [storage] url: s3://BUCKET[/PREFIX] "
    "(endpoint and credentials from AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, "
    "AWS_SECRET_ACCESS_KEY, AWS_REGION), or '' for the workspace folder"
)
PULL_HELP = (
    "copy every file of scenario NAME (scenarios/NAME/) from the workspace's store, its "
    "folder or an s3:// bucket, into DIR, created if missing; prints each file, then the "
    "count and bytes (works without a running runtime)"
)


def _pull_arguments(pull: argparse.ArgumentParser) -> None:
    pull.add_argument("scenario", metavar="NAME", type=_scenario)
    pull.add_argument("dir", metavar="DIR", help="the local folder to copy into")
    pull.add_argument("--storage", metavar="URL", help=STORAGE_HELP)
    pull.add_argument(
        "--force",
        action="store_true",
        help="copy into a DIR that is not empty, replacing the files the scenario has there",
    )


def _submit_arguments(submit: argparse.ArgumentParser) -> None:
    submit.add_argument("scenario", metavar="SCENARIO", type=_scenario)
    submit.add_argument("--requirement", metavar="TEXT")
    submit.add_argument(
        "--auto-approve",
        action="store_true",
        help="approve its Init → Execute handoffs without waiting for `baton approve`",
    )


NEW_HELP = (
    "create scenarios/NAME/ in the workspace to start your own scenario: a commented "
    "scenario.toml, the agents' prompts to edit under prompts/, an empty inputs/ folder; "
    "prints the files and the next commands (a folder that already exists is refused)"
)


def _new_arguments(new: argparse.ArgumentParser) -> None:
    new.add_argument("scenario", metavar="NAME", help="the scenario name, e.g. my_task")
    new.add_argument(
        "--dir",
        dest="workspace",
        default=argparse.SUPPRESS,
        metavar="DIR",
        help="the workspace to create scenarios/NAME/ in, created if missing (the same as "
        "--workspace; default: .)",
    )


def _top_level() -> tuple[
    argparse.ArgumentParser, argparse._SubParsersAction[Any], argparse.ArgumentParser
]:
    # The parser, its sub-command action, and the options every command takes.
    parser = _Parser(
        prog="baton",
        description="An async actor runtime for long multi-agent Claude pipelines.",
        epilog="Exit codes: 0 ok, 1 failure, 2 usage.",
    )
    parser.add_argument("--version", action=_Version)
    common = _Parser(add_help=False)
    common.add_argument(
        "--workspace", default=".", metavar="DIR", help="the workspace (default: .)"
    )
    commands: argparse._SubParsersAction[Any] = parser.add_subparsers(
        title="commands", dest="name", metavar="COMMAND"
    )
    return parser, commands, common


def _message_parser() -> argparse.ArgumentParser:
    # `build_parser` with `tell` and `ask` alone, for a command line that starts with one of
    # them: that command's parser is the same in both, and what the top level can still say
    # (unrecognized arguments) names no other command. The whole parser would load the
    # client's bodies (pydantic), which the other commands' options take their bounds from.
    parser, commands, common = _top_level()
    message_commands(commands, common)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The `baton` argument parser; each sub-command stores its coroutine in `command` (or,
    `tell` and `ask`, their function in `light_command`)."""
    # The client's bodies: every command but `tell` and `ask` (`_message_parser`) loads them.
    from baton.server._dead_letter_models import DEFAULT_LIMIT as DEFAULT_DEAD_LETTERS  # noqa: PLC0415
    from baton.server._dead_letter_models import MAX_LIMIT as MAX_DEAD_LETTERS  # noqa: PLC0415
    from baton.server._memory_command import memory_commands  # noqa: PLC0415

    parser, commands, common = _top_level()

    def command(name: str, handler: Command, help_text: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = commands.add_parser(
            name, parents=[common], help=help_text, description=help_text
        )
        sub.set_defaults(command=handler)
        return sub

    run_cmd = command(
        "run",
        _run,
        "run the runtime in the workspace until SIGINT/SIGTERM; as each scenario ends, write "
        "its report to .baton/reports/<scenario>.html and print the path",
    )
    run_cmd.add_argument(
        "--submit",
        metavar="SCENARIO",
        action="append",
        type=_scenario,
        help="submit SCENARIO once started; repeat it to run several side by side",
    )
    run_cmd.add_argument(
        "--requirement", metavar="TEXT", help="the requirement for --submit (one scenario)"
    )
    run_cmd.add_argument(
        "--auto-approve",
        action="store_true",
        help="approve --submit's Init → Execute handoffs without waiting for `baton approve`",
    )
    run_cmd.add_argument(
        "--exit-when-idle", action="store_true", help="exit once no scenario is active"
    )
    run_cmd.add_argument(
        "--record",
        action="store_true",
        help="append every model reply of a scenario's run to scenarios/<name>/recording.jsonl, "
        "which a run without ANTHROPIC_API_KEY then replays (needs the key; "
        "docs/recordings.md)",
    )
    run_cmd.add_argument(
        "--actor",
        action="append",
        default=[],
        metavar="NAME=MODULE:CLASS",
        help="also spawn your own Actor subclass CLASS from MODULE (importable from the "
        "current directory) under NAME; repeatable",
    )

    mailbox_help = (
        "mailbox backend, overriding runtime.mailbox: memory, sqlite, or "
        "redis://HOST:PORT/DB to share actors with `baton worker` processes"
    )
    run_cmd.add_argument("--mailbox", metavar="BACKEND", help=mailbox_help)
    run_cmd.add_argument("--storage", metavar="URL", help=STORAGE_HELP)
    _log_format_argument(run_cmd)
    run_cmd.add_argument(
        "--actors",
        action="append",
        metavar="A[,B]",
        help="run only these pipeline actors (init, execute, scheduler) here; the others run "
        "in `baton worker` processes (needs a redis:// mailbox; default: all three)",
    )

    worker = command(
        "worker",
        _worker,
        "consume named pipeline actors' Redis mailboxes alongside `baton run`",
    )
    worker.add_argument(
        "--actors",
        action="append",
        required=True,
        metavar="A[,B]",
        help="the pipeline actors to run here: init, execute (comma-separated or repeated)",
    )
    worker.add_argument(
        "--mailbox",
        metavar="redis://HOST:PORT/DB",
        help="the Redis that `baton run` uses (default: runtime.mailbox of the workspace)",
    )
    worker.add_argument("--storage", metavar="URL", help=STORAGE_HELP)
    _log_format_argument(worker)

    _submit_arguments(
        command(
            "submit",
            _submit,
            "submit a scenario to the scheduler; a run stopped at its spend cap "
            "(max_cost_usd) continues where it stopped once the cap is raised",
        )
    )

    _new_arguments(command("new", _new, NEW_HELP))

    message_commands(commands, common)

    _tail_arguments(
        command(
            "tail",
            _tail,
            "print the token log (works without a running runtime): date and time (UTC) "
            "first, and a `---- NAME run N (NAME@N) ----` line before each scenario run's "
            "first record",
        )
    )

    _report_arguments(command("report", _report, REPORT_HELP))

    _cost_arguments(command("cost", _cost, COST_HELP))

    _pull_arguments(command("pull", _pull, PULL_HELP))

    status = command(
        "status",
        _status,
        "show actors, context fill, the conversations each agent works on, "
        "each agent's last compaction (with its audit file), "
        "scenarios, pending approvals (with their design files and the commands that decide "
        "them), dead letters",
    )
    status.add_argument("--json", action="store_true", help="print the report as JSON")

    show = command(
        "show",
        _show,
        "show one scenario's state and its pending handoff (summary, design files, commands)",
    )
    show.add_argument("scenario", metavar="SCENARIO", type=_scenario)
    show.add_argument("--json", action="store_true", help="print the state as JSON")

    dead = command(
        "dead-letters",
        _dead_letters,
        "list the runtime's dead letters, newest last: time, actor, message type, reason",
    )
    dead.add_argument(
        "-n",
        "--lines",
        type=_limit,
        default=DEFAULT_DEAD_LETTERS,
        metavar="N",
        help=f"the newest N (default {DEFAULT_DEAD_LETTERS}, at most {MAX_DEAD_LETTERS})",
    )
    dead.add_argument("--json", action="store_true", help="print the list as JSON")

    approve = command("approve", _approve, "approve a scenario's pending handoff")
    approve.add_argument("scenario", metavar="SCENARIO", type=_scenario)

    reject = command("reject", _reject, "reject a scenario's pending handoff")
    reject.add_argument("scenario", metavar="SCENARIO", type=_scenario)
    reject.add_argument("--reason", required=True, metavar="R", help="why; Init gets it back")

    memory_commands(commands, common)

    command("stop", _stop, "stop the runtime gracefully and wait until it has exited")
    return parser


def _found(error: BaseException, kind: type[E]) -> E | None:
    # Errors raised inside task groups arrive wrapped in exception groups.
    if isinstance(error, kind):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = _found(inner, kind)
            if found is not None:
                return found
    return None


def _silence_broken_pipe() -> None:
    # `baton tail | head`: the reader left; exit quietly instead of a traceback at flush.
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _failed(args: argparse.Namespace, message: object, code: int) -> int:
    one_line = str(message).replace("\n", " ")
    sys.stderr.write(f"baton {args.name}: error: {one_line}\n")
    return code


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `baton` console script; returns the process exit code."""
    arguments = sys.argv[1:] if argv is None else argv
    light = arguments[:1] in (["tell"], ["ask"])
    parser = _message_parser() if light else build_parser()
    try:
        args = parser.parse_args(arguments)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    light_command: LightCommand | None = getattr(args, "light_command", None)
    if light_command is not None:
        return _run_light(light_command, args)
    handler: Command | None = getattr(args, "command", None)
    if handler is None:
        sys.stderr.write(
            "baton: error: choose a command (run, worker, submit, new, tell, ask, tail, report, "
            "cost, pull, show, approve, reject, dead-letters, memory, stop) — see `baton --help`\n"
        )
        return EXIT_USAGE
    logs = CommandLogging(args.name, _log_file(args))
    if args.name not in LIGHT_COMMANDS:
        logs.configure()
    try:
        return _dispatch(handler, args, logs)
    finally:
        logs.restore()


def _run_light(command: LightCommand, args: argparse.Namespace) -> int:
    # As `_dispatch` ends a command, without the event loop: nothing here logs.
    try:
        command(args)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_broken_pipe()
        return EXIT_OK
    except WireError as error:
        return _failed(args, error.message, EXIT_USAGE if error.usage else EXIT_FAILURE)
    except OSError as error:
        return _failed(args, f"{error} — check the workspace path", EXIT_FAILURE)
    return EXIT_OK


async def _quietly(handler: Command, args: argparse.Namespace, logs: CommandLogging) -> None:
    from baton.server._log_limits import quiet_event_loop  # noqa: PLC0415 - asyncio's logger

    # A failure the event loop reports over and over (EMFILE on accept under fd exhaustion)
    # is logged once per interval, not once per occurrence with a traceback.
    quiet_event_loop(before_logging=logs.configure)
    await handler(args)


def _dispatch(handler: Command, args: argparse.Namespace, logs: CommandLogging) -> int:
    import anyio  # noqa: PLC0415

    from baton.errors import BatonError  # noqa: PLC0415
    from baton.pipeline.errors import CommandLineError  # noqa: PLC0415

    try:
        anyio.run(_quietly, handler, args, logs, backend="asyncio")
    except KeyboardInterrupt:
        return EXIT_OK if args.name == "tail" else EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_broken_pipe()
        return EXIT_OK
    except Exception as exc:
        error = _found(exc, BatonError)
        os_error = _found(exc, OSError) if error is None else None
        if os_error is not None:
            # A file that cannot be used (a directory where a file belongs, no permission).
            return _failed(args, f"{os_error} — check the workspace path", EXIT_FAILURE)
        if error is None:
            raise
        usage = isinstance(error, CommandLineError)
        return _failed(args, error, EXIT_USAGE if usage else EXIT_FAILURE)
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
