"""`baton tail` before it reads: what is at the token log's path, and at its folder's, is
checked first, so a misplaced file is named instead of read as "no token log yet"."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.server.cli import main


@pytest.mark.parametrize(("occupied", "what"), [(".baton", "state"), (".baton/logs", "log")])
def test_a_file_where_the_log_folder_belongs_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], occupied: str, what: str
) -> None:
    """A file at `.baton/logs` (or `.baton`): tail exits 1 in one line naming it as a file
    in the folder's place and what to do, not "no token log yet"."""
    (tmp_path / occupied).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / occupied).write_text("not a folder\n", encoding="utf-8")
    code = main(["tail", "--workspace", str(tmp_path)])
    err = capsys.readouterr().err
    folder = "baton's state folder" if what == "state" else "the log folder"
    assert (1, 1) == (code, len(err.splitlines()))
    assert err.startswith(
        f"baton tail: error: {tmp_path / occupied} is a file, not {folder} — move it aside; "
        "`baton run` makes the folder and writes the token log there"
    )
