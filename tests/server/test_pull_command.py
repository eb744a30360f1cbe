"""`baton pull NAME DIR`: a scenario's files copied from the workspace's store, its folder or
a bucket on a real SeaweedFS, into a local folder (docs/storage.md, "`baton pull`")."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from test_cli_imports import NEVER, RUN, heavy

from baton.server.cli import main
from baton.storage import open_storage

FILES = {
    "design.md": b"# Design\n",
    "execute/report.json": b'{"ok": true}',
    "execute/deep/trace.bin": os.urandom(300_000),
    "inputs/résumé 1.md": "Résumé".encode(),
}
SIZE = sum(len(data) for data in FILES.values())


async def put_scenario(url: str, workspace: Path, name: str = "demo") -> None:
    store = open_storage(url, workspace)
    for path, data in FILES.items():
        await store.write(f"scenarios/{name}/{path}", data)
    await store.write("scenarios/demo2/not-this.md", b"another scenario")


def pulled(into: Path) -> dict[str, bytes]:
    return {
        path.relative_to(into).as_posix(): path.read_bytes()
        for path in sorted(into.rglob("*"))
        if path.is_file()
    }


def expected_output(source: str, into: Path) -> list[str]:
    lines = [f"{path}  {len(FILES[path]):,} bytes" for path in sorted(FILES)]
    return [
        *lines,
        f"pulled 4 files ({SIZE:,} bytes) of scenario demo from {source} into {into}",
    ]


async def test_pull_copies_a_scenario_from_the_workspace_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With no store configured, `pull` copies the workspace's scenario byte for byte."""
    workspace, into = tmp_path / "ws", tmp_path / "out" / "demo"
    await put_scenario("", workspace)
    code = await anyio.to_thread.run_sync(
        main, ["pull", "demo", str(into), "--workspace", str(workspace)]
    )
    assert (0, FILES) == (code, pulled(into))
    assert expected_output(str(workspace), into) == capsys.readouterr().out.splitlines()


async def test_pull_copies_from_a_bucket_and_loads_no_server_agent_or_model(
    tmp_path: Path, s3_url: str
) -> None:
    """A fresh `baton pull` copies from a bucket, exits 0 and loads no server, agent or model."""
    workspace, into, report = tmp_path / "ws", tmp_path / "out", tmp_path / "modules.json"
    workspace.mkdir()
    await put_scenario(s3_url, workspace)
    argv = ["pull", "demo", str(into), "--workspace", str(workspace)]
    with anyio.fail_after(60):
        done = await anyio.run_process(
            [sys.executable, "-c", RUN, str(report), *argv],
            env={**os.environ, "BATON_STORAGE__URL": s3_url},
            check=False,
        )
    found = json.loads(report.read_text())
    loaded = heavy(found["modules"], NEVER)
    assert (0, 0, [], FILES) == (done.returncode, found["code"], loaded, pulled(into))
    assert expected_output(s3_url, into) == done.stdout.decode().splitlines()


async def test_pull_refuses_a_folder_that_is_not_empty_unless_forced(
    tmp_path: Path, s3_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A DIR that is not empty is refused; `--force` replaces the scenario's files, keeps others."""
    workspace, into = tmp_path / "ws", tmp_path / "out"
    workspace.mkdir()
    await put_scenario(s3_url, workspace)
    into.mkdir()
    (into / "design.md").write_bytes(b"mine")
    (into / "notes.txt").write_bytes(b"keep me")
    argv = ["pull", "demo", str(into), "--workspace", str(workspace), "--storage", s3_url]
    refused = await anyio.to_thread.run_sync(main, argv)
    err = capsys.readouterr().err
    kept = pulled(into)
    forced = await anyio.to_thread.run_sync(main, [*argv, "--force"])
    assert (
        2,
        [
            f"baton pull: error: {into} is not empty — name a new or empty folder, or "
            "pass --force to replace the files the scenario has there"
        ],
    ) == (
        refused,
        err.splitlines(),
    )
    assert ({"design.md": b"mine", "notes.txt": b"keep me"}, 0) == (kept, forced)
    assert {**FILES, "notes.txt": b"keep me"} == pulled(into)


@pytest.mark.parametrize(
    "case",
    [
        (["pull", "nope", "OUT"], 1, "holds no object 'scenarios/nope/' — check the scenario"),
        (["pull", "../etc", "OUT"], 2, "scenario name '../etc' is not allowed"),
        (["pull", "demo", "OUT", "--storage", "s3://baton-missing/x"], 1, "NoSuchBucket"),
        (["pull", "demo", "OUT", "--storage", "ftp://x"], 1, "storage.url: Value error"),
    ],
    ids=["unknown-scenario", "bad-name", "missing-bucket", "bad-url"],
)
async def test_pull_fails_in_one_line_and_writes_nothing(
    tmp_path: Path,
    s3_url: str,
    capsys: pytest.CaptureFixture[str],
    case: tuple[list[str], int, str],
) -> None:
    """A bad scenario, name, store or url: one line on stderr, its exit code, no DIR made."""
    workspace, into = tmp_path / "ws", tmp_path / "out"
    workspace.mkdir()
    await put_scenario(s3_url, workspace)
    (workspace / "baton.toml").write_text(f'[storage]\nurl = "{s3_url}"\n')
    argv, code, says = case
    line = [str(into) if arg == "OUT" else arg for arg in argv]
    exited = await anyio.to_thread.run_sync(main, [*line, "--workspace", str(workspace)])
    err = capsys.readouterr().err.splitlines()
    assert (code, 1, True, False) == (exited, len(err), says in err[0], into.exists()), err
