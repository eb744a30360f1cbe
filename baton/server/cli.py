"""The `baton` command line (README.md, "Running baton"; docs/architecture.md, "server/").

Exit codes: 0 success, 1 failure (any baton error: no runtime, unknown actor, a timeout...),
2 usage (the command line itself is wrong). An error is one line on stderr saying what to do.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any, NoReturn

import anyio
import structlog

from baton.errors import BatonError, CommandLineError, StateFileError, UsageError
from baton.runtime.logging import configure_logging
from baton.runtime.token_log import TOKEN_LOG
from baton.server._log_limits import quiet_event_loop
from baton.server._render import render_record, render_scenario, render_status
from baton.server._tail import follow_lines, read_lines, record_matches, record_problem
from baton.server.client import Client, not_unicode, not_unicode_message

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

Command = Callable[[argparse.Namespace], Awaitable[None]]


class _Parser(argparse.ArgumentParser):
    """argparse, reporting a usage error as one line (exit 2) instead of usage + error."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message} — see `{self.prog} --help`\n")
        raise SystemExit(EXIT_USAGE)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive number of seconds")
    return value


def _payload(args: argparse.Namespace) -> dict[str, Any]:
    try:
        payload = json.loads(args.json)
    except json.JSONDecodeError as exc:
        raise CommandLineError(
            f"the {args.type} payload is not valid JSON ({exc}) — pass an object, "
            """e.g. '{"text": "hi"}'"""
        ) from None
    if not isinstance(payload, dict):
        raise CommandLineError(
            f"the {args.type} payload must be a JSON object of its fields, not "
            f'{type(payload).__name__} — e.g. \'{{"text": "hi"}}\''
        )
    where = not_unicode(payload)
    if where is not None:
        raise CommandLineError(not_unicode_message(args.type, where))
    return payload


def _print(text: str) -> None:
    print(text, flush=True)  # noqa: T201 - the CLI's output


# --- commands ------------------------------------------------------------------------------


async def _run(args: argparse.Namespace) -> None:
    # Imported here: the server side (FastAPI, uvicorn) is needed by `run` alone.
    from baton.server._run import RunOptions, run  # noqa: PLC0415

    options = RunOptions(
        workspace=Path(args.workspace),
        submit=args.submit,
        requirement=args.requirement,
        exit_when_idle=args.exit_when_idle,
        auto_approve=args.auto_approve,
        actors=tuple(args.actor),
        mailbox=args.mailbox,
        roles=_role_list(args.actors) if args.actors else None,
    )
    await run(options, sys.stdout)


def _role_list(specs: list[str]) -> tuple[str, ...]:
    return tuple(name.strip() for spec in specs for name in spec.split(",") if name.strip())


async def _worker(args: argparse.Namespace) -> None:
    # Imported here, as for `run`: only this command needs the pipeline.
    from baton.server._worker import WorkerOptions, work  # noqa: PLC0415

    options = WorkerOptions(
        workspace=Path(args.workspace), actors=_role_list(args.actors), mailbox=args.mailbox
    )
    await work(options, sys.stdout)


async def _submit(args: argparse.Namespace) -> None:
    async with Client(args.workspace) as client:
        state = await client.submit(
            args.scenario, args.requirement, auto_approve=True if args.auto_approve else None
        )
        _print(render_scenario(state))


async def _tell(args: argparse.Namespace) -> None:
    payload = _payload(args)
    async with Client(args.workspace) as client:
        await client.tell(args.actor, args.type, payload)
    _print(f"queued {args.type} for {args.actor}")


async def _ask(args: argparse.Namespace) -> None:
    payload = _payload(args)
    async with Client(args.workspace) as client:
        reply = await client.ask(args.actor, args.type, payload, timeout=args.timeout)
    _print(json.dumps(reply, ensure_ascii=False))


async def _status(args: argparse.Namespace) -> None:
    async with Client(args.workspace) as client:
        report = await client.status()
    _print(report.model_dump_json(indent=2) if args.json else render_status(report))


async def _approve(args: argparse.Namespace) -> None:
    async with Client(args.workspace) as client:
        _print(render_scenario(await client.approve(args.scenario)))


async def _reject(args: argparse.Namespace) -> None:
    async with Client(args.workspace) as client:
        _print(render_scenario(await client.reject(args.scenario, args.reason)))


async def _stop(args: argparse.Namespace) -> None:
    async with Client(args.workspace) as client:
        pid = (await client.health()).pid
        await client.stop()
    _print(f"stopped the runtime in {args.workspace} (pid {pid})")


async def _tail(args: argparse.Namespace) -> None:
    path = Path(args.workspace) / TOKEN_LOG
    if await anyio.Path(path).is_dir():
        raise StateFileError(path, "is a directory, not the token log", "move it aside")
    if not args.follow and not await anyio.Path(path).is_file():
        raise UsageError(
            f"no token log at {path} yet — start `baton run` in {args.workspace}, "
            "or wait for it with `baton tail -f`"
        )
    lines = follow_lines(path) if args.follow else read_lines(path)
    async for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            record = None
        if not isinstance(record, dict):
            if args.actor is None and args.event is None:
                _print(line if args.json else f"(not a JSON record) {line}")
            continue
        if not record_matches(record, actor=args.actor, event=args.event):
            continue
        problem = None if args.json else record_problem(record)
        if problem is None:
            _print(line if args.json else render_record(record))
        else:
            # A line of the wrong shape (written by hand, or by something else): shown as
            # it is, so the reader sees it, instead of ending the tail.
            _print(f"(not a token-log record: {problem}) {line}")


# --- parser --------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The `baton` argument parser; each sub-command stores its coroutine in `command`."""
    parser = _Parser(
        prog="baton",
        description="An async actor runtime for long multi-agent Claude pipelines.",
        epilog="Exit codes: 0 ok, 1 failure, 2 usage.",
    )
    parser.add_argument("--version", action="version", version=f"baton {version('baton')}")
    common = _Parser(add_help=False)
    common.add_argument(
        "--workspace", default=".", metavar="DIR", help="the workspace (default: .)"
    )
    commands = parser.add_subparsers(title="commands", dest="name", metavar="COMMAND")

    def command(name: str, handler: Command, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, parents=[common], help=help_text, description=help_text)
        sub.set_defaults(command=handler)
        return sub

    run_cmd = command("run", _run, "run the runtime in the workspace until SIGINT/SIGTERM")
    run_cmd.add_argument("--submit", metavar="SCENARIO", help="submit SCENARIO once started")
    run_cmd.add_argument("--requirement", metavar="TEXT", help="the requirement for --submit")
    run_cmd.add_argument(
        "--auto-approve",
        action="store_true",
        help="approve --submit's Init → Execute handoffs without waiting for `baton approve`",
    )
    run_cmd.add_argument(
        "--exit-when-idle", action="store_true", help="exit once no scenario is active"
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

    submit = command("submit", _submit, "submit a scenario to the scheduler")
    submit.add_argument("scenario", metavar="SCENARIO")
    submit.add_argument("--requirement", metavar="TEXT")
    submit.add_argument(
        "--auto-approve",
        action="store_true",
        help="approve its Init → Execute handoffs without waiting for `baton approve`",
    )

    for name, handler, help_text in (
        ("tell", _tell, "send a message to an actor"),
        ("ask", _ask, "send a message to an actor and print its reply as JSON"),
    ):
        sub = command(name, handler, help_text)
        sub.add_argument("actor", metavar="ACTOR")
        sub.add_argument("type", metavar="TYPE", help="the message class name, e.g. Prompt")
        sub.add_argument("json", metavar="JSON", help="the message fields as a JSON object")
        if name == "ask":
            sub.add_argument(
                "--timeout", type=_positive, default=60.0, metavar="S", help="default 60"
            )

    tail = command("tail", _tail, "print the token log (works without a running runtime)")
    tail.add_argument("-f", "--follow", action="store_true", help="keep printing new records")
    tail.add_argument("--actor", metavar="A", help="only this actor's records")
    tail.add_argument("--event", metavar="E", help="only this event, or family (handoff)")
    tail.add_argument("--json", action="store_true", help="print the JSON lines as written")

    status = command("status", _status, "show actors, context fill, scenarios, dead letters")
    status.add_argument("--json", action="store_true", help="print the report as JSON")

    approve = command("approve", _approve, "approve a scenario's pending handoff")
    approve.add_argument("scenario", metavar="SCENARIO")

    reject = command("reject", _reject, "reject a scenario's pending handoff")
    reject.add_argument("scenario", metavar="SCENARIO")
    reject.add_argument("--reason", required=True, metavar="R", help="why; Init gets it back")

    command("stop", _stop, "stop the runtime gracefully and wait until it has exited")
    return parser


def _baton_error(error: BaseException) -> BatonError | None:
    # Errors raised inside task groups arrive wrapped in exception groups.
    if isinstance(error, BatonError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = _baton_error(inner)
            if found is not None:
                return found
    return None


def _os_error(error: BaseException) -> OSError | None:
    # A file that cannot be used (a directory where a file belongs, no permission) is said
    # in one line whether or not it came through a task group.
    if isinstance(error, OSError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = _os_error(inner)
            if found is not None:
                return found
    return None


def _silence_broken_pipe() -> None:
    # `baton tail | head`: the reader left; exit quietly instead of a traceback at flush.
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `baton` console script; returns the process exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    handler: Command | None = getattr(args, "command", None)
    if handler is None:
        sys.stderr.write(
            "baton: error: choose a command (run, worker, submit, tell, ask, tail, status, "
            "approve, reject, stop) — see `baton --help`\n"
        )
        return EXIT_USAGE
    # Restored on return: main() is also called in-process (tests, embedding scripts).
    logging_before = structlog.get_config()
    configure_logging(level="info" if args.name in ("run", "worker") else "warning")
    try:
        return _dispatch(handler, args)
    finally:
        structlog.configure(**logging_before)


async def _quietly(handler: Command, args: argparse.Namespace) -> None:
    # A failure the event loop reports over and over (EMFILE on accept under fd exhaustion)
    # is logged once per interval, not once per occurrence with a traceback.
    quiet_event_loop()
    await handler(args)


def _dispatch(handler: Command, args: argparse.Namespace) -> int:
    try:
        anyio.run(_quietly, handler, args, backend="asyncio")
    except KeyboardInterrupt:
        return EXIT_OK if args.name == "tail" else EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_broken_pipe()
        return EXIT_OK
    except Exception as exc:
        error = _baton_error(exc)
        os_error = _os_error(exc) if error is None else None
        if os_error is not None:
            sys.stderr.write(f"baton {args.name}: error: {os_error} — check the workspace path\n")
            return EXIT_FAILURE
        if error is None:
            raise
        one_line = str(error).replace("\n", " ")
        sys.stderr.write(f"baton {args.name}: error: {one_line}\n")
        return EXIT_USAGE if isinstance(error, CommandLineError) else EXIT_FAILURE
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
