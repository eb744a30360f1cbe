"""`baton new NAME [--dir DIR]`: what it writes and prints, and its one-line refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.server.cli import main

NAME = "my_task"


def test_new_writes_the_folder_and_prints_the_files_and_next_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 0; every file written is listed, then the record, approve and replay commands."""
    code = main(["new", NAME, "--workspace", str(tmp_path)])
    out = capsys.readouterr().out.splitlines()
    assert 0 == code
    assert f"created scenarios/{NAME}/" == out[0]
    assert f"  scenarios/{NAME}/scenario.toml" in out
    assert f"  scenarios/{NAME}/prompts/init.md" in out
    assert f"  scenarios/{NAME}/inputs/README.md" in out
    assert f"  3. baton run --workspace {tmp_path} --record --submit {NAME}" in out
    assert (tmp_path / "scenarios" / NAME / "scenario.toml").is_file()


def test_dir_names_the_workspace_and_creates_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--dir DIR` writes DIR/scenarios/NAME/, creating DIR."""
    workspace = tmp_path / "evals"
    assert 0 == main(["new", NAME, "--dir", str(workspace)])
    capsys.readouterr()
    assert (workspace / "scenarios" / NAME / "prompts" / "execute.md").is_file()


def test_an_existing_scenario_is_a_one_line_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder that exists: exit 1, one line naming it, nothing on stdout."""
    (tmp_path / "scenarios" / NAME).mkdir(parents=True)
    code = main(["new", NAME, "--workspace", str(tmp_path)])
    captured = capsys.readouterr()
    assert (1, "") == (code, captured.out)
    assert [
        f"baton new: error: {tmp_path / 'scenarios' / NAME} already exists — edit it, or "
        "choose another name for the new scenario"
    ] == captured.err.splitlines()


def test_a_bad_name_is_a_one_line_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A name that breaks the rule: exit 2, one line with the rule, no folder."""
    code = main(["new", "_x", "--workspace", str(tmp_path)])
    err = capsys.readouterr().err.splitlines()
    assert 2 == code
    assert 1 == len(err)
    code = main(["new", "a/b", "--workspace", str(tmp_path)])
    err = capsys.readouterr().err.splitlines()
    assert 2 == code
    assert [
        "baton new: error: scenario name 'a/b' is not allowed: it contains '/'; a scenario "
        "name is 1 to 120 characters, starts with a letter or a digit and goes on with "
        "letters, digits, '_', '-' or '.'"
    ] == err
    assert not (tmp_path / "scenarios").exists()


def test_the_help_says_what_new_writes(capsys: pytest.CaptureFixture[str]) -> None:
    """`baton new --help` names the files it writes and the --dir option."""
    assert 0 == main(["new", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for expected in ("scenario.toml", "prompts/", "inputs/", "--dir DIR", "already exists"):
        assert expected in text
