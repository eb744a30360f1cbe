"""`baton tell` and `baton ask` on the command line's own wire say, byte for byte and with the
same exit code, what they said through the async client: against a real control server
(success, each kind of refusal, the runtime's ask timeout, what no request can carry), with no
runtime (no socket, a stale one, the current directory), a runtime that never answers, and a
server whose answers are not the runtime's."""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import socket
import threading
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import pytest
import structlog
from anyio.from_thread import start_blocking_portal
from control_actors import Failing, Greeter, Stuck, quick_policy

from baton.runtime import Runtime
from baton.server import ControlServer, _wire
from baton.server._command_logging import CommandLogging
from baton.server.cli import _dispatch, _message_parser, build_parser, main
from baton.server.client import Client

Outcome = tuple[int, str, str]

HUNG_TIMEOUT = 0.3  # seconds both clients give a runtime that never answers


async def _client_tell(args: argparse.Namespace, timeout: float) -> None:
    async with Client(args.workspace, timeout=timeout) as client:
        await client.tell(args.actor, args.type, json.loads(args.json))
    print(f"queued {args.type} for {args.actor}", flush=True)  # noqa: T201


async def _client_ask(args: argparse.Namespace, timeout: float) -> None:
    async with Client(args.workspace, timeout=timeout) as client:
        reply = await client.ask(args.actor, args.type, json.loads(args.json), timeout=args.timeout)
    print(json.dumps(reply, ensure_ascii=False), flush=True)  # noqa: T201


def through_client(
    capsys: pytest.CaptureFixture[str], *argv: str, timeout: float = 30.0
) -> Outcome:
    """What `baton ARGV` printed and returned when tell and ask went through the async
    client (`Client`, run and ended by the CLI's `_dispatch`)."""
    args = build_parser().parse_args(argv)
    command = _client_tell if args.name == "tell" else _client_ask

    async def handler(args: argparse.Namespace) -> None:
        await command(args, timeout)

    with warnings.catch_warnings():
        # Its transport leaves the socket of a connect that timed out to the collector;
        # what is compared is what the command said.
        warnings.simplefilter("ignore", ResourceWarning)
        code = _dispatch(handler, args, CommandLogging(args.name, None))
        gc.collect()
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def through_wire(capsys: pytest.CaptureFixture[str], *argv: str) -> Outcome:
    """What `baton ARGV` prints and returns now."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(autouse=True)
def quiet_runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The runtime shares this process with the CLI: its log lines are captured, not printed,
    so stdout and stderr hold what the commands print."""
    monkeypatch.setattr("baton.runtime.logging.configure_logging", lambda **_: None)
    with structlog.testing.capture_logs():
        yield


@asynccontextmanager
async def _served(workspace: Path) -> AsyncIterator[None]:
    release = anyio.Event()
    async with (
        Runtime.open(workspace, policy=quick_policy()) as runtime,
        ControlServer.open(runtime),
    ):
        await runtime.spawn("greeter", Greeter)
        await runtime.spawn("stuck", Stuck, release)
        await runtime.spawn("failing", Failing)
        try:
            yield
        finally:
            release.set()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Path]:
    """A workspace whose runtime (a greeter, an actor that never answers `Wait`, one that
    fails on `Boom`) is served in a thread of its own, so the CLI can run here."""
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(_served(tmp_path)):
        yield tmp_path


ANSWERED = [
    (("tell", "greeter", "Hello", '{"name": "a"}'), 0),
    (("ask", "greeter", "Hello", '{"name": "\u00e9\u4e2d \\ud83d\\ude00"}'), 0),
    (("tell", "nobody", "Hello", '{"name": "a"}'), 1),
    (("tell", "a b", "Hello", '{"name": "a"}'), 1),
    (("ask", "greeter", "Hello", '{"nme": "a"}'), 1),
    (("ask", "greeter", "Nope", "{}"), 1),
    (("ask", "failing", "Boom", "{}"), 1),
    (("ask", "stuck", "Wait", "{}", "--timeout", "0.2"), 1),
    (("tell", "gr\udcffeeter", "Hello", '{"name": "a"}'), 1),
    (("ask", "greeter", "He\udcff\udcfello", '{"name": "a"}'), 1),
]


@pytest.mark.parametrize(("argv", "code"), ANSWERED, ids=[" ".join(a) for a, _ in ANSWERED])
def test_what_the_runtime_answers_is_said_as_the_client_said_it(
    served: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], code: int
) -> None:
    """A reply, a queued message, each refusal's error body (unknown actor, invalid payload,
    unknown type, failed handler, the ask's own timeout) and a name no request can carry:
    the same lines and exit code as through the async client."""
    ws = ("--workspace", str(served))
    before = through_client(capsys, *argv, *ws)
    assert code == before[0]
    assert before == through_wire(capsys, *argv, *ws)


def test_no_runtime_is_said_as_the_client_said_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No socket, a stale socket nobody listens on, and no runtime in the current directory
    (`baton run` without `--workspace` in the hint): exit 1 with `NoRuntimeError`'s line."""
    stale = tmp_path / "stale"
    (stale / ".baton").mkdir(parents=True)
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(stale / ".baton" / "control.sock"))
    monkeypatch.chdir(tmp_path)
    cases = [
        ("tell", "greeter", "Hello", "{}", "--workspace", str(tmp_path / "none")),
        ("ask", "greeter", "Hello", "{}", "--workspace", str(stale)),
        ("tell", "greeter", "Hello", "{}"),
    ]
    before = [through_client(capsys, *argv) for argv in cases]
    after = [through_wire(capsys, *argv) for argv in cases]
    assert before == after
    assert (1, "", "baton tell: error: no runtime in . — start one with `baton run`\n") == after[2]


@pytest.mark.parametrize("backlog_full", [False, True], ids=["unanswered", "backlog full"])
def test_a_runtime_that_never_answers_is_said_as_the_client_said_it(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    backlog_full: bool,
) -> None:
    """A socket whose connections are never accepted, or that takes no more of them: both
    wait the client's timeout and exit 1 saying the runtime did not answer in time."""
    monkeypatch.setattr(_wire, "DEFAULT_TIMEOUT", HUNG_TIMEOUT)
    (tmp_path / ".baton").mkdir()
    path = str(tmp_path / ".baton" / "control.sock")
    cases = [
        ("tell", "greeter", "Hello", "{}", "--workspace", str(tmp_path)),
        ("ask", "greeter", "Hello", "{}", "--timeout", "0.1", "--workspace", str(tmp_path)),
    ]
    with contextlib.ExitStack() as held:
        listener = held.enter_context(socket.socket(socket.AF_UNIX))
        listener.bind(path)
        listener.listen(0 if backlog_full else 8)
        while backlog_full:  # connections that fill the backlog, until it takes no more
            waiting = held.enter_context(socket.socket(socket.AF_UNIX))
            waiting.setblocking(False)
            try:
                waiting.connect(path)
            except BlockingIOError:
                break
        before = [through_client(capsys, *argv, timeout=HUNG_TIMEOUT) for argv in cases]
        after = [through_wire(capsys, *argv) for argv in cases]
    assert before == after
    assert [1, 1] == [code for code, _, _ in after]
    assert "did not answer in time" in after[0][2]


@contextmanager
def answering(socket_path: Path, answer: bytes) -> Iterator[None]:
    """A server on `socket_path` that reads each request whole, sends `answer` (or, if empty,
    nothing) and closes the connection."""
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(socket_path))
    listener.listen(8)

    def serve() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:  # the listener was closed: the test is over
                return
            with connection:
                request = chunk = b"-"
                while chunk and b"\r\n\r\n" not in request:
                    chunk = connection.recv(65536)
                    request += chunk
                head, _, body = request.partition(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.lower().split(b"\r\n")
                        if line.startswith(b"content-length:")
                    ),
                    0,
                )
                while chunk and len(body) < length:
                    chunk = connection.recv(65536)
                    body += chunk
                connection.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(timeout=5)


def _response(status: str, content_type: str, body: bytes) -> bytes:
    head = f"HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {len(body)}"
    return f"{head}\r\nconnection: close\r\n\r\n".encode() + body


COMMAND_LINE_ERROR = json.dumps(
    {"error": {"type": "CommandLineError", "message": "fix\nthis", "details": {}}}
).encode()
NOT_THE_RUNTIME = [
    ("text", _response("404 Not Found", "text/plain; charset=utf-8", b"Not Found"), 1),
    ("no error body", _response("500 Oops", "application/json", b'{"error": 42}'), 1),
    ("command line", _response("400 Bad", "application/json", COMMAND_LINE_ERROR), 2),
    ("silence", b"", 1),
]


@pytest.mark.parametrize(
    ("answer", "code"),
    [(answer, code) for _, answer, code in NOT_THE_RUNTIME],
    ids=[name for name, _, _ in NOT_THE_RUNTIME],
)
def test_answers_that_are_not_the_runtimes_are_said_as_the_client_said_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], answer: bytes, code: int
) -> None:
    """An error that is not an error body, an error the CLI exits 2 for, and a connection
    closed without an answer: the same lines and exit codes as through the async client."""
    (tmp_path / ".baton").mkdir()
    cases = [
        ("tell", "greeter", "Hello", "{}", "--workspace", str(tmp_path)),
        ("ask", "greeter", "Hello", "{}", "--workspace", str(tmp_path)),
    ]
    with answering(tmp_path / ".baton" / "control.sock", answer):
        before = [through_client(capsys, *argv) for argv in cases]
        after = [through_wire(capsys, *argv) for argv in cases]
    assert before == after
    assert [code, code] == [exit_code for exit_code, _, _ in after]


def test_a_payload_no_request_can_carry_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A lone surrogate in the payload, NaN, or a number too large for JSON: exit 2 with one
    line saying what to fix, before any runtime is looked for."""
    ws = ("--workspace", str(tmp_path))
    answers = [
        through_wire(capsys, "tell", "greeter", "Hello", '{"name": "\\ud800"}', *ws),
        through_wire(capsys, "ask", "greeter", "Hello", '{"n": NaN}', *ws),
        through_wire(capsys, "tell", "greeter", "Hello", '{"n": 1e400}', *ws),
    ]
    assert [2, 2, 2] == [code for code, _, _ in answers]
    assert (
        "baton tell: error: the Hello payload is not valid Unicode at 'name': it holds a lone "
        "surrogate (a \\ud800-\\udfff escape without its pair) — send the character itself or "
        "its full surrogate pair\n"
    ) == answers[0][2]
    assert "baton ask: error: the Hello payload is not valid JSON (NaN is " in answers[1][2]
    assert "baton tell: error: the Hello payload is not valid JSON (1e400 is " in answers[2][2]


PARSED = [
    ("tell", "--help"),
    ("ask", "-h"),
    ("tell",),
    ("ask", "a", "B", "{}", "--timeout", "0"),
    ("ask", "a", "B", "{}", "--timeout", "x"),
    ("tell", "a", "B", "{}", "extra"),
    ("tell", "a", "B", "{}", "--workspace"),
    ("ask", "a", "B", "{}", "--timeout", "2.5", "--workspace", "w"),
]


@pytest.mark.parametrize("argv", PARSED, ids=[" ".join(argv) for argv in PARSED])
def test_tell_and_asks_own_parser_parses_as_the_whole_one(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    """A command line starting with `tell` or `ask` gets the same help, usage errors and
    arguments from the parser of those two commands as from the whole `baton` parser."""

    def parsed(parser: argparse.ArgumentParser) -> tuple[object, str, str]:
        try:
            result: object = vars(parser.parse_args(argv))
        except SystemExit as exit_:
            result = exit_.code
        captured = capsys.readouterr()
        return result, captured.out, captured.err

    assert parsed(build_parser()) == parsed(_message_parser())
