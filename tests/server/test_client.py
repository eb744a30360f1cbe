"""The control server on its Unix socket, and `baton.connect` talking to it."""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import TaskStatus
from control_actors import Boom, Failing, Greeter, Greeting, Hello, Stuck, Wait, quick_policy

import baton
from baton import AskTimeoutError, HandlerFailedError, UnknownActorError
from baton.errors import StateFileError, UsageError
from baton.mailboxes.errors import InvalidMessageError
from baton.pipeline.errors import NoSchedulerError
from baton.runtime import Runtime
from baton.runtime.errors import RemoteFailure
from baton.server import ControlServer
from baton.server._workspace_claim import claim_workspace
from baton.server.errors import InvalidPayloadError, NoRuntimeError, WorkspaceBusyError


@asynccontextmanager
async def served(workspace: Path) -> AsyncIterator[tuple[Runtime, ControlServer]]:
    release = anyio.Event()
    async with (
        Runtime.open(workspace, policy=quick_policy(), shutdown_timeout=1) as runtime,
        ControlServer.open(runtime) as server,
    ):
        await runtime.spawn("greeter", Greeter)
        await runtime.spawn("failing", Failing)
        await runtime.spawn("stuck", Stuck, release)
        try:
            yield runtime, server
        finally:
            release.set()


async def test_the_socket_is_private_and_the_pid_file_names_this_process(tmp_path: Path) -> None:
    """The control socket is created 0600 and the pid file holds this process's pid."""
    async with served(tmp_path) as (_, server):
        mode = stat.S_IMODE(server.socket_path.stat().st_mode)
        pid = server.pid_file.read_text().strip()
    assert (0o600, str(os.getpid())) == (mode, pid)


async def test_socket_and_pid_file_are_removed_on_exit(tmp_path: Path) -> None:
    """Leaving the server removes its socket and pid file."""
    async with served(tmp_path) as (_, server):
        paths = [server.socket_path, server.pid_file]
    assert [False, False] == [path.exists() for path in paths]


async def test_a_second_server_on_the_workspace_is_refused(tmp_path: Path) -> None:
    """While one runtime holds the workspace, another is refused with WorkspaceBusyError."""
    async with served(tmp_path), Runtime.open(tmp_path) as second:
        with pytest.raises(WorkspaceBusyError) as refused:
            async with ControlServer.open(second):
                pass
    assert f"a baton runtime (pid {os.getpid()}) already runs in" in str(refused.value)


async def test_a_stale_pid_file_and_socket_are_replaced(tmp_path: Path) -> None:
    """A pid file and socket left by a dead process are cleaned up, and the server starts."""
    control = tmp_path / ".baton"
    control.mkdir()
    (control / "baton.pid").write_text("999999999\n")
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(str(control / "control.sock"))
    leftover.close()  # the file stays, nobody listens: what a killed process leaves
    async with served(tmp_path), baton.connect(tmp_path) as client:
        health = await client.health()
    assert os.getpid() == health.pid


async def test_connect_without_a_runtime_says_how_to_start_one(tmp_path: Path) -> None:
    """connect() to a workspace with no runtime raises NoRuntimeError naming `baton run`."""
    with pytest.raises(NoRuntimeError) as missing:
        async with baton.connect(tmp_path):
            pass
    expected = f"no runtime in {tmp_path} — start one with `baton run --workspace {tmp_path}`"
    assert expected == str(missing.value)


async def test_tell_ask_and_status_through_the_client(tmp_path: Path) -> None:
    """The client tells, asks (raw JSON or a reply model) and reads the status report."""
    async with served(tmp_path), baton.connect(tmp_path) as client:
        await client.tell("greeter", Hello(name="a"))
        raw = await client.ask("greeter", "Hello", {"name": "b"})
        typed = await client.ask("greeter", Hello(name="c"), reply_type=Greeting)
        report = await client.status()
    greeter = next(actor for actor in report.actors if actor.name == "greeter")
    assert ({"text": "hi b"}, Greeting(text="hi c")) == (raw, typed)
    assert (3, False) == (greeter.handled, report.scheduler)


async def test_server_errors_come_back_as_baton_errors(tmp_path: Path) -> None:
    """Each error response is raised as the same baton error class, message intact."""
    async with served(tmp_path), baton.connect(tmp_path) as client:
        with pytest.raises(UnknownActorError) as unknown:
            await client.ask("nobody", Hello(name="a"))
        with pytest.raises(InvalidMessageError):
            await client.ask("greeter", "Nope", {})
        with pytest.raises(InvalidPayloadError):
            await client.tell("greeter", "Hello", {"nam": "a"})
        with pytest.raises(AskTimeoutError) as timeout:
            await client.ask("stuck", Wait(), timeout=0.05)
        with pytest.raises(HandlerFailedError) as failed:
            await client.ask("failing", Boom())
        with pytest.raises(NoSchedulerError):
            await client.submit("leave_application")
    assert ("nobody", 0.05) == (unknown.value.name, timeout.value.timeout)
    assert isinstance(failed.value.__cause__, RemoteFailure)
    assert ("ValueError", "ValueError: boom") == (
        failed.value.__cause__.remote_type,
        str(failed.value.__cause__),
    )


async def test_a_client_used_outside_its_block_says_so(tmp_path: Path) -> None:
    """Calling a client that was never entered raises a UsageError naming `async with`."""
    with pytest.raises(UsageError, match=r"async with baton\.connect"):
        await baton.Client(tmp_path).status()


async def test_stop_sets_the_servers_stop_request(tmp_path: Path) -> None:
    """client.stop(wait=False) reaches POST /stop, which sets the owner's stop event."""
    async with served(tmp_path) as (_, server), baton.connect(tmp_path) as client:
        await client.stop(wait=False)
        requested = server.stop_requested.is_set()
    assert requested


async def test_tail_reads_the_file_then_follows_new_records(tmp_path: Path) -> None:
    """tail() yields the file's records; tail(follow=True) yields records as they are emitted."""
    async with served(tmp_path) as (runtime, _), baton.connect(tmp_path) as client:
        async with runtime.token_log.follow() as written:
            runtime.token_log.emit(
                "actor.restarted", actor="a", restarts=1, backoff_ms=0, reason="x"
            )
            with anyio.fail_after(5):
                await written.receive()
        history = [record async for record in client.tail()]
        followed: list[dict[str, Any]] = []

        async def follow() -> None:
            async for record in client.tail(follow=True, event="message"):
                followed.append(record)
                return

        async with anyio.create_task_group() as tg:
            tg.start_soon(follow)
            with anyio.fail_after(5):
                await runtime.token_log.wait_followers()
            runtime.token_log.emit(
                "actor.restarted", actor="a", restarts=2, backoff_ms=0, reason="y"
            )
            runtime.token_log.emit(
                "message.dead_lettered",
                actor="b",
                message_id="m",
                message_type="T",
                attempt=1,
                reason="z",
            )
    assert ["actor.restarted"] == [record["event"] for record in history]
    assert [("message.dead_lettered", "b")] == [(r["event"], r["actor"]) for r in followed]


async def test_leaving_the_server_ends_a_following_tail(tmp_path: Path) -> None:
    """A client following the token log sees its stream end when the server stops."""
    ended = anyio.Event()
    stop_server = anyio.Event()

    async def serve(runtime: Runtime, *, task_status: TaskStatus[None]) -> None:
        async with ControlServer.open(runtime):
            task_status.started()
            await stop_server.wait()

    async def follow(client: baton.Client) -> None:
        async for _ in client.tail(follow=True):
            pass
        ended.set()

    async with Runtime.open(tmp_path) as runtime, anyio.create_task_group() as tg:
        await tg.start(serve, runtime)
        async with baton.connect(tmp_path) as client:
            tg.start_soon(follow, client)
            with anyio.fail_after(5):
                await runtime.token_log.wait_followers()
            stop_server.set()
            with anyio.fail_after(5):
                await ended.wait()
    assert ended.is_set()


async def test_a_lone_surrogate_is_refused_by_the_client_naming_the_field(tmp_path: Path) -> None:
    """A payload or a name holding `\\ud800` is a UsageError naming where, not a
    UnicodeEncodeError; the runtime keeps answering."""
    async with served(tmp_path), baton.connect(tmp_path) as client:
        with pytest.raises(InvalidMessageError) as in_payload:
            await client.tell("greeter", "Hello", {"name": "\ud800"})
        with pytest.raises(InvalidMessageError):
            await client.ask("greeter", "Hello", {"name": "a\udfff"})
        with pytest.raises(UsageError) as in_name:
            await client.submit("\ud800")
        reply = await client.ask("greeter", "Hello", {"name": "b"})
    assert "the Hello payload is not valid Unicode at 'name'" in str(in_payload.value)
    assert "lone surrogate" in str(in_name.value)
    assert {"text": "hi b"} == reply


async def test_a_pid_file_that_is_a_named_pipe_is_refused_at_once(tmp_path: Path) -> None:
    """A named pipe where the pid file belongs is never read nor written as one (reading it
    would wait for a writer for ever): the start is refused at once, naming it."""
    control = tmp_path / ".baton"
    control.mkdir()
    os.mkfifo(control / "baton.pid")
    with anyio.fail_after(10), pytest.raises(StateFileError) as refused:
        async with claim_workspace(tmp_path):
            pass
    assert (
        f"{control / 'baton.pid'} is not a regular file — move it aside, then start again"
    ) in str(refused.value)
