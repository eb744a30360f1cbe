"""leave_application end to end with `[storage] url` set: the run's artifacts are in the
bucket, under the same keys and with the same bytes as a run in the workspace folder
(docs/storage.md, "What is stored where")."""

from __future__ import annotations

from pathlib import Path

from baton.storage import Storage, open_storage
from tests.e2e.test_leave_application import NAME, run_to_end, workspace

INPUTS = ("offline_script.json", "scenario.toml")
FOLDER = f"scenarios/{NAME}"


def local_outputs(ws: Path) -> dict[str, bytes]:
    """What the run wrote in the scenario's folder, by path from it, with its bytes."""
    folder = ws / FOLDER
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name not in INPUTS
    }


async def stored_outputs(storage: Storage) -> dict[str, bytes]:
    """What the run wrote under the scenario's prefix of the bucket, likewise."""
    listing = await storage.list(FOLDER)
    return {
        item.path: await storage.read(f"{FOLDER}/{item.path}")
        for item in listing.objects
        if item.path not in INPUTS
    }


async def test_leave_application_with_a_bucket_writes_its_artifacts_there(
    s3_url: str, tmp_path: Path
) -> None:
    """Offline with `[storage] url`: the scenario completes as in the workspace folder, and
    every file the local run writes is in the bucket at the same key, byte for byte, with
    none of them left in the workspace."""
    local = workspace(tmp_path / "local")
    local_state, _ = await run_to_end(local, environ={})
    remote = workspace(tmp_path / "remote")
    (remote / "baton.toml").write_text(f'[storage]\nurl = "{s3_url}"\n', encoding="utf-8")
    storage = open_storage(s3_url, remote)
    for name in INPUTS:  # where the submit puts them (docs/storage.md, "What is stored where")
        await storage.write(f"{FOLDER}/{name}", (remote / FOLDER / name).read_bytes())
    state, _ = await run_to_end(remote, environ={})
    expected = local_outputs(local)
    assert ("completed", 2) == (local_state.phase, local_state.iteration)
    assert (local_state.phase, local_state.iteration, local_state.last_report) == (
        state.phase,
        state.iteration,
        state.last_report,
    )
    assert {"BusinessRules.md", "execution_outputs/iteration_2/failure_summary.json"} <= set(
        expected
    )
    assert sorted(expected) == sorted(await stored_outputs(storage))
    assert expected == await stored_outputs(storage)
    assert {} == local_outputs(remote)
