"""The process log file of `baton run` and `baton worker`: private, rotated between whole
lines, and never failing the code that logs."""

from __future__ import annotations

import json
import logging
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from baton.runtime.logging import LogFile, configure_logging, stop_stdlib_forwarding


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """Put structlog and the standard library's root logger back after the test."""
    yield
    structlog.reset_defaults()
    stop_stdlib_forwarding()


def test_rotation_happens_between_whole_lines_and_keeps_the_newest_backups(
    tmp_path: Path,
) -> None:
    """Lines of 30 bytes into files of at most 100: every file holds whole lines, none passes
    100 bytes, two backups are kept and together they hold the newest lines in order."""
    path = tmp_path / "logs" / "baton.jsonl"
    log_file = LogFile(path, max_bytes=100, backups=2)
    lines = [json.dumps({"n": f"{n:020d}"}) for n in range(12)]  # 29 characters + newline
    for line in lines:
        log_file.write(line)
    log_file.close()
    files = [Path(f"{path}.2"), Path(f"{path}.1"), path]
    contents = [file.read_bytes() for file in files]
    kept = [line for content in contents for line in content.decode().splitlines()]
    assert (False, [90, 90, 90]) == (Path(f"{path}.3").exists(), [len(c) for c in contents])
    assert lines[-9:] == kept
    assert all(content.endswith(b"\n") for content in contents)


def test_the_file_is_0600_in_a_0700_directory(tmp_path: Path) -> None:
    """The log and the directories made for it under `.baton/` are readable by the user only."""
    path = tmp_path / ".baton" / "logs" / "baton.jsonl"
    log_file = LogFile(path)
    log_file.write("{}")
    log_file.close()
    assert (0o600, 0o700, 0o700) == (mode(path), mode(path.parent), mode(path.parent.parent))


def test_an_unwritable_place_sends_lines_to_stderr_after_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a file where the log's directory belongs, writing never raises: both lines go to
    stderr after one warning; once the way is clear the next line goes to the file."""
    (tmp_path / "logs").write_text("in the way")
    path = tmp_path / "logs" / "baton.jsonl"
    log_file = LogFile(path)
    log_file.write('{"n": 1}')
    log_file.write('{"n": 2}')
    err = capsys.readouterr().err.splitlines()
    (tmp_path / "logs").unlink()
    log_file.write('{"n": 3}')
    log_file.close()
    assert 3 == len(err)
    assert err[0].startswith(f"baton: warning: cannot write the log file {path} (")
    assert (['{"n": 1}', '{"n": 2}'], '{"n": 3}\n', "") == (
        err[1:],
        path.read_text(),
        capsys.readouterr().err,
    )


@pytest.mark.usefixtures("restore_logging")
def test_configure_logging_with_a_file_writes_baton_and_library_lines_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """structlog lines and the standard library's warnings land in the file as JSON lines,
    and nothing reaches stderr."""
    path = tmp_path / "baton.jsonl"
    log_file = LogFile(path)
    configure_logging(file=log_file)
    structlog.get_logger("test").info("run.started", workspace="w")
    logging.getLogger("uvicorn.error").warning("port %s busy", 8000)
    log_file.close()
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [("run.started", "info"), ("port 8000 busy", "warning")] == [
        (record["event"], record["level"]) for record in records
    ]
    assert "" == capsys.readouterr().err
