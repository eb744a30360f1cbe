"""A file that may not grow (EFBIG: `ulimit -f`, the filesystem's largest file) is not a full
disk: the work that needed the write fails once, with a reason naming the file and the limit,
and nothing waits for room (README.md, "After a full disk or a damaged file")."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from pydantic import BaseModel

from baton import Actor, Runtime, SupervisorPolicy, handler
from baton.errors import (
    DiskFullFailure,
    FileTooLargeFailure,
    RuntimeFailure,
    file_too_large,
    out_of_space,
)
from baton.runtime._error_wire import status_for

LIMIT = 1000  # bytes a child process may write to one file


def run_child(script: str, root: Path) -> dict[str, object]:
    """Run `script` in a child Python (the file-size limit it sets must not reach pytest's
    own process) and return the JSON it prints last."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), str(root), str(LIMIT)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert 0 == result.returncode, result.stderr[-3000:]
    outcome: dict[str, object] = json.loads(result.stdout.splitlines()[-1])
    return outcome


# --- which failure an OSError is ------------------------------------------------------------


def test_efbig_is_a_file_too_large_failure_not_a_full_disk() -> None:
    """An OSError EFBIG, even deep in a group's causes, is a FileTooLargeFailure naming its
    file (a RuntimeFailure, no DiskFullFailure), so nothing waits for room on it."""
    cause = OSError(errno.EFBIG, "File too large", "/ws/.baton/journal/init/c.jsonl")
    wrapped = RuntimeError("round failed")
    wrapped.__cause__ = cause
    group = ExceptionGroup("round", [wrapped])
    found = file_too_large(group)
    assert isinstance(found, FileTooLargeFailure)
    assert (None, False, True) == (
        out_of_space(group),
        isinstance(found, DiskFullFailure),
        isinstance(found, RuntimeFailure),
    )
    assert "/ws/.baton/journal/init/c.jsonl cannot grow (File too large)" in str(found)


def test_without_a_size_limit_efbig_names_the_filesystems_largest_file() -> None:
    """With no RLIMIT_FSIZE (as in the test process), the message says the file reached the
    largest file its filesystem allows, and what to do."""
    found = file_too_large(OSError(errno.EFBIG, "File too large", "big.jsonl"))
    assert found is not None
    assert (
        "big.jsonl cannot grow (File too large): it has reached the largest file its "
        "filesystem allows; waiting does not make room, so the work that needed the write "
        "failed — move the workspace to a filesystem that allows larger files"
    ) == str(found)


def test_a_file_too_large_failure_is_answered_507_as_no_room() -> None:
    """The control API answers a FileTooLargeFailure with 507 (Insufficient Storage), the
    status of a full disk, its type telling the two apart."""
    failure = FileTooLargeFailure("big.jsonl", "File too large")
    assert 507 == status_for(failure)


# --- a handler whose write finds the file may not grow ------------------------------------


class Job(BaseModel):
    n: int


class TooLarge(Actor):
    """Fails every job as a journal append past the file-size limit does."""

    def __init__(self, calls: list[int], keys: int) -> None:
        self.calls = calls
        self.actor_max_concurrent_keys = keys

    @handler
    async def job(self, msg: Job) -> None:
        self.calls.append(msg.n)
        raise OSError(errno.EFBIG, "File too large", "journal.jsonl")


@pytest.mark.parametrize("keys", [1, 2], ids=["plain", "keyed"])
async def test_a_handler_that_may_not_grow_its_file_fails_once_without_waiting(
    keys: int,
) -> None:
    """An ask raises FileTooLargeFailure naming the file, a told job is dead-lettered with
    it; each is handled once, with no restart and no wait for room (the actor's sleeps
    would hang the test), and the actor goes on (plain and keyed actors alike)."""
    calls: list[int] = []

    async def never(_: float) -> None:
        await anyio.sleep_forever()

    policy = SupervisorPolicy(max_attempts=3, sleep=never)
    async with Runtime.open(policy=policy) as rt:
        await rt.spawn("writer", TooLarge, calls, keys)
        with anyio.fail_after(5):
            with pytest.raises(FileTooLargeFailure) as asked:
                await rt.ask("writer", Job(n=1))
            await rt.tell("writer", Job(n=2))
            await rt.dead_letters.wait_total(1)
        (letter,) = list(rt.dead_letters)
        (status,) = rt.status()
    assert "journal.jsonl cannot grow" in str(asked.value)
    assert letter.reason.startswith("failed: FileTooLargeFailure: journal.jsonl cannot grow")
    assert ([1, 2], 0, 2, "running", None) == (
        calls,
        status.restarts,
        status.failures,
        status.state,
        status.stop_reason,
    )


_RUNTIME_UNDER_LIMIT = """
    import json, os, resource, sys
    from pathlib import Path
    import anyio
    from pydantic import BaseModel
    from baton import Actor, Runtime, handler
    from baton.errors import FileTooLargeFailure
    from baton.runtime.disk_writes import append_whole

    class Line(BaseModel):
        text: str

    class Appender(Actor):
        def __init__(self, path: Path, calls: list[str]) -> None:
            self.path = path
            self.calls = calls

        @handler
        async def line(self, msg: Line) -> None:
            self.calls.append(msg.text[0])
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                data = f"{msg.text}\\n".encode()
                await anyio.to_thread.run_sync(append_whole, fd, data, self.path)
            finally:
                os.close(fd)

    async def main(root: Path, limit: int) -> None:
        path = root / "lines.txt"
        calls: list[str] = []
        resource.setrlimit(
            resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1])
        )
        async with Runtime.open() as rt:
            await rt.spawn("appender", Appender, path, calls)
            await rt.ask("appender", Line(text="a" * 600))
            try:
                await rt.ask("appender", Line(text="b" * 600), timeout=5)
                asked = None
            except FileTooLargeFailure as exc:
                asked = str(exc)
            await rt.tell("appender", Line(text="c" * 600))
            with anyio.fail_after(10):
                await rt.dead_letters.wait_total(1)
            (status,) = rt.status()
            reasons = [letter.reason for letter in rt.dead_letters]
        print(json.dumps({
            "asked": asked,
            "reasons": reasons,
            "calls": calls,
            "status": [status.state, status.restarts, status.failures],
            "size": path.stat().st_size,
        }))

    anyio.run(main, Path(sys.argv[1]), int(sys.argv[2]))
"""


def test_a_real_file_size_limit_fails_the_ask_and_dead_letters_the_tell(tmp_path: Path) -> None:
    """Under RLIMIT_FSIZE (a child process; write() returns EFBIG, SIGXFSZ being ignored):
    the ask whose append would pass the limit raises FileTooLargeFailure naming the file and
    the limit, a told one is dead-lettered with it, each handled once, the file keeps only
    its whole first line, and the process finishes instead of waiting for room."""
    outcome = run_child(_RUNTIME_UNDER_LIMIT, tmp_path)
    path = tmp_path / "lines.txt"
    expected = (
        f"{path} cannot grow (File too large): this process may write files of at most "
        "1,000 bytes (ulimit -f); waiting does not make room, so the work that needed the "
        "write failed — raise the limit (`ulimit -f unlimited`) and start baton again"
    )
    assert expected == outcome["asked"]
    assert [f"failed: FileTooLargeFailure: {expected}"] == outcome["reasons"]
    assert (["a", "b", "c"], ["running", 0, 2], 601) == (
        outcome["calls"],
        outcome["status"],
        outcome["size"],
    )


_TOKEN_LOG_UNDER_LIMIT = """
    import json, resource, sys
    from pathlib import Path
    import anyio
    from baton.runtime.token_log import TokenLog

    async def main(root: Path, limit: int) -> None:
        path = root / "tokens.jsonl"
        resource.setrlimit(
            resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1])
        )
        with anyio.fail_after(10):
            async with TokenLog.open(path, backups=50) as log:
                for restarts in range(1, 21):
                    log.emit(
                        "actor.restarted", actor="a", restarts=restarts, backoff_ms=0, reason="x"
                    )
                    await log.drained()
        files = sorted(root.glob("tokens.jsonl*"), key=lambda p: p.stat().st_mtime_ns)
        lines = [line for p in files for line in p.read_text().splitlines()]
        print(json.dumps({
            "restarts": sorted(json.loads(line)["restarts"] for line in lines),
            "files": len(files),
        }))

    anyio.run(main, Path(sys.argv[1]), int(sys.argv[2]))
"""


def test_the_token_log_rotates_at_a_file_size_limit_and_keeps_its_records(
    tmp_path: Path,
) -> None:
    """Under RLIMIT_FSIZE the token log neither waits for room nor crashes: it rotates
    whenever the file reaches the limit, and every record is written whole."""
    outcome = run_child(_TOKEN_LOG_UNDER_LIMIT, tmp_path)
    assert list(range(1, 21)) == outcome["restarts"]
    assert isinstance(outcome["files"], int)
    assert outcome["files"] > 1
