"""`baton memory list|search|forget` and the control API's `/memory` routes: through a
running runtime, straight from the store when none runs, and every bad request refused."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import structlog
from anyio.from_thread import start_blocking_portal

from baton.memory import MemoryEntry, open_memory
from baton.memory.errors import UnknownMemoryError
from baton.pipeline.config import load_config
from baton.runtime import Runtime
from baton.server import ControlServer
from baton.server._workspace_files import CONTROL_SOCKET
from baton.server.cli import main
from baton.server.client import Client


@pytest.fixture(autouse=True)
def quiet_runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The runtime shares this process with the CLI: its log lines are captured, so stdout
    and stderr hold what the commands print."""
    monkeypatch.setattr("baton.runtime.logging.configure_logging", lambda **_: None)
    with structlog.testing.capture_logs():
        yield


def seed(workspace: Path) -> list[MemoryEntry]:
    """Two findings of scenario `leave` and one of `other`, stored before anything runs."""

    async def remember() -> list[MemoryEntry]:
        async with await open_memory(workspace) as store:
            return [
                await store.remember(
                    "balance update rule was missing", tags=["scenario:leave", "kind:finding"]
                ),
                await store.remember("dates must be ISO 8601", tags=["scenario:leave"]),
                await store.remember("weekend rule unclear", tags=["scenario:other"]),
            ]

    return anyio.run(remember)


@asynccontextmanager
async def served(workspace: Path) -> AsyncIterator[Runtime]:
    config = load_config(workspace, environ={}, overrides={"runtime": {"mailbox": "memory"}})
    async with Runtime.open(workspace, config=config) as runtime, ControlServer.open(runtime):
        yield runtime


@contextmanager
def running(workspace: Path) -> Iterator[Any]:
    """A runtime served in a thread of its own, so the CLI can run here."""
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(served(workspace)),
    ):
        yield portal


def baton(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_cli_goes_through_the_running_runtime(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a runtime running, list, search and forget are answered by its control API (the
    CLI's own store access is disabled here and never missed)."""
    entries = seed(tmp_path)
    ws = str(tmp_path)

    def no_local_store(*_: object, **__: object) -> None:
        raise AssertionError("the CLI opened the store itself while a runtime runs")

    monkeypatch.setattr("baton.memory.open_memory", no_local_store)
    with running(tmp_path):
        code, out, _ = baton(capsys, "memory", "list", "--workspace", ws, "--json")
        listed = [e["id"] for e in json.loads(out)["entries"]]
        assert (0, [e.id for e in entries]) == (code, listed)
        code, out, _ = baton(
            capsys, "memory", "list", "--workspace", ws, "--tag", "scenario:leave", "--json"
        )
        assert [e.id for e in entries[:2]] == [e["id"] for e in json.loads(out)["entries"]]
        code, out, _ = baton(
            capsys, "memory", "search", "balance rule", "-n", "1", "--workspace", ws
        )
        assert (0, entries[0].id) == (code, out.split()[0])
        code, out, _ = baton(capsys, "memory", "forget", entries[1].id, "--workspace", ws)
        assert (0, f"forgot {entries[1].id}") == (code, out.split(" (")[0])
        code, out, _ = baton(capsys, "memory", "list", "--workspace", ws)
        assert entries[1].id not in out
        assert "2 entries" in out


def test_an_unknown_id_is_a_one_line_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Forgetting an id the store does not hold exits 1 with one line saying what to do,
    with a runtime and without one."""
    seed(tmp_path)
    expected = "baton memory: error: no memory entry with id 'm-nope' — `baton memory list` "
    code, _, err = baton(capsys, "memory", "forget", "m-nope", "--workspace", str(tmp_path))
    assert (1, [expected + "shows the ids"]) == (code, err.splitlines())
    with running(tmp_path):
        code, _, err = baton(capsys, "memory", "forget", "m-nope", "--workspace", str(tmp_path))
    assert (1, [expected + "shows the ids"]) == (code, err.splitlines())


def test_without_a_runtime_the_cli_reads_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No runtime: the command opens the workspace's store itself."""
    entries = seed(tmp_path)
    code, out, _ = baton(
        capsys, "memory", "search", "weekend", "--workspace", str(tmp_path), "--json"
    )
    hits = json.loads(out)["hits"]
    assert (0, [entries[2].id]) == (code, [hit["entry"]["id"] for hit in hits])


def test_without_a_store_nothing_is_listed_or_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A workspace with no memory file lists nothing and is left without one."""
    code, out, _ = baton(capsys, "memory", "list", "--workspace", str(tmp_path))
    assert (0, "no memory entries\n", []) == (code, out, os.listdir(tmp_path))


@pytest.mark.parametrize(
    "args",
    [
        ["memory"],
        ["memory", "search", "  "],
        ["memory", "search", "x", "-n", "0"],
        ["memory", "forget", ""],
        ["memory", "drop", "m-1"],
    ],
)
def test_bad_command_lines_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    """No action, a blank query or id, a limit out of range, an unknown action: exit 2, one
    line."""
    code, _, err = baton(capsys, *args, "--workspace", str(tmp_path))
    assert (2, 1) == (code, len(err.splitlines()))


async def test_the_api_answers_404_for_an_unknown_id_and_422_for_a_blank_query(
    tmp_path: Path,
) -> None:
    """`DELETE /memory/{id}` of an unknown id is 404, `GET /memory/search` with an empty
    or blank query or a bad tag 422; the client raises the runtime's error class."""
    async with served(tmp_path):
        transport = httpx2.AsyncHTTPTransport(uds=os.fspath(tmp_path / CONTROL_SOCKET))
        async with httpx2.AsyncClient(transport=transport, base_url="http://baton") as http:
            statuses = [
                (await http.delete("/memory/m-nope")).status_code,
                (await http.get("/memory/search", params={"q": ""})).status_code,
                (await http.get("/memory/search", params={"q": "  "})).status_code,
                (await http.get("/memory", params={"tag": "has space"})).status_code,
            ]
        async with Client(tmp_path) as client:
            with pytest.raises(UnknownMemoryError):
                await client.memory_forget("m-nope")
            stored = await client.memory_list()
    assert ([404, 422, 422, 422], []) == (statuses, stored.entries)
