"""`baton run` and `baton worker` check an `s3://` store before they start: one that cannot
be used stops them with one line naming it and what to check (docs/storage.md, "Checked at
start")."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.server.cli import main


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--exit-when-idle"],
        ["worker", "--actors", "execute", "--mailbox", "redis://127.0.0.1:1/0"],
    ],
    ids=["run", "worker"],
)
def test_a_missing_bucket_stops_the_start_in_one_line(
    argv: list[str], s3_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--storage` naming a missing bucket stops the start: exit 1, one line, no traceback."""
    url = "s3://baton-no-such-bucket/team"
    code = main([*argv, "--storage", url, "--workspace", str(tmp_path)])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith(f"baton {argv[0]}: error:")]
    assert (1, False, 1) == (code, "Traceback" in err, len(errors)), err
    assert errors[0].startswith(f"baton {argv[0]}: error: storage {url} cannot be reached: ")
    assert "check that bucket 'baton-no-such-bucket' exists" in errors[0]


def test_bad_credentials_from_the_environment_stop_run(
    s3_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`BATON_STORAGE__URL` with a wrong secret key stops `baton run` naming the variables."""
    monkeypatch.setenv("BATON_STORAGE__URL", s3_url)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    code = main(["run", "--exit-when-idle", "--workspace", str(tmp_path)])
    err = capsys.readouterr().err
    assert (1, True) == (code, "check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in err), err


def test_a_reachable_bucket_lets_run_start(
    s3_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bucket that answers passes the check: `baton run --exit-when-idle` exits 0."""
    (tmp_path / "baton.toml").write_text(f'[storage]\nurl = "{s3_url}"\n')
    code = main(["run", "--exit-when-idle", "--workspace", str(tmp_path)])
    assert (0, "") == (code, capsys.readouterr().err)
