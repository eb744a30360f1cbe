"""`Read` opens regular files with one link only: a FIFO, a socket or a hard link is refused
before anything is opened (docs/handoffs.md, "Sandbox")."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from baton.agents.tools import List, Read, Sandbox, Toolbox, Write
from baton.context.payload import ToolUseBlock

# More FIFO reads than any default thread pool has workers (asyncio's: at most 32).
MANY = 33


def read_call(path: str, n: int) -> ToolUseBlock:
    return {"type": "tool_use", "id": f"t{n}", "name": "Read", "input": {"path": path}}


@pytest.fixture
async def fifo(tmp_path: Path) -> AsyncIterator[Path]:
    """A named pipe in the workspace nobody writes to. On teardown a writer end releases any
    reader a broken Read left blocked in a worker thread, and the unlink fails the ones still
    queued, so a regression fails this test instead of hanging the event loop's close (async:
    it runs before the loop waits for its worker threads)."""
    path = tmp_path / "pipe"
    os.mkfifo(path)
    yield path
    writer = None
    with contextlib.suppress(OSError):  # ENXIO: no reader is blocked
        writer = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    path.unlink()
    if writer is not None:
        os.close(writer)


async def test_fifo_reads_are_refused_at_once_and_normal_reads_go_on(
    tmp_path: Path, fifo: Path
) -> None:
    """Many concurrent Reads of a FIFO each come back as 'not a regular file' within the tool
    timeout, and a Read of a normal file in the same batch still returns its content."""
    (tmp_path / "notes.md").write_text("hello\n", encoding="utf-8")
    box = Toolbox([Read(Sandbox(tmp_path))], timeout=5)
    calls = [read_call("pipe", n) for n in range(MANY)] + [read_call("notes.md", MANY)]
    outcomes = await box.run_all(calls)
    assert [True] * MANY == [
        o.is_error and "pipe is not a regular file" in o.content for o in outcomes[:MANY]
    ]
    assert (False, "     1\thello") == (
        outcomes[MANY].is_error,
        outcomes[MANY].content.splitlines()[1],
    )


async def test_a_socket_is_refused(tmp_path: Path) -> None:
    """A Unix socket in the workspace is not read."""
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "s.sock"))
        outcome = await Toolbox([Read(Sandbox(tmp_path))]).run(read_call("s.sock", 0))
    assert (True, True) == (outcome.is_error, "s.sock is not a regular file" in outcome.content)


async def test_a_file_with_several_hard_links_is_refused(tmp_path: Path) -> None:
    """A hard link brings a file from outside the workspace in without a symlink to resolve:
    a file with more than one link is refused, and its content does not appear."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "secret.txt").write_text("api-key-123\n", encoding="utf-8")
    os.link(tmp_path / "secret.txt", workspace / "copy.txt")
    outcome = await Toolbox([Read(Sandbox(workspace))]).run(read_call("copy.txt", 0))
    assert (True, True, False) == (
        outcome.is_error,
        "2 hard links" in outcome.content,
        "api-key" in outcome.content,
    )


async def test_a_fifo_where_a_folder_is_expected_fails_at_once(tmp_path: Path, fifo: Path) -> None:
    """Read, List and Write of paths that go through a named pipe as if it were a folder each
    come back as an error within the deadline: the walk never opens the pipe for reading."""
    sandbox = Sandbox(tmp_path, write_paths=("pipe",))
    box = Toolbox([Read(sandbox), List(sandbox), Write(sandbox)], timeout=5)
    calls: list[ToolUseBlock] = [
        read_call("pipe/x.txt", 0),
        {"type": "tool_use", "id": "t1", "name": "List", "input": {"path": "pipe"}},
        {
            "type": "tool_use",
            "id": "t2",
            "name": "Write",
            "input": {"path": "pipe/x", "content": ""},
        },
    ]
    with anyio.fail_after(5):
        outcomes = await box.run_all(calls)
    assert [
        "pipe/x.txt does not exist; List its directory to see what is there",
        "pipe is a file; use Read to see it",
        True,
    ] == [outcomes[0].content, outcomes[1].content, outcomes[2].is_error]
