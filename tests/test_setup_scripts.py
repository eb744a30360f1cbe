"""scripts/system-packages: what a fresh machine needs, as root, with sudo, or neither."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "system-packages"
INSTALL = (
    "apt-get install -y --no-install-recommends --no-upgrade "
    "redis-server tmux chromium fonts-liberation python3-venv"
)
BASH = shutil.which("bash") or "/bin/bash"


def _tool(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


@pytest.fixture
def machine(tmp_path: Path) -> Path:
    """A PATH of stand-ins that write what they were asked to do to calls.log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    _tool(bin_dir, "apt-get", f'echo "apt-get $*" >> {log}')
    _tool(bin_dir, "id", 'echo "${FAKE_UID:-0}"')
    # `python3 -c 'import ensurepip'` fails the way Debian's python3 without python3-venv does.
    _tool(bin_dir, "python3", "exit 1")
    return bin_dir


def _run(bin_dir: Path, uid: int) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(bin_dir), "FAKE_UID": str(uid), "HOME": str(bin_dir)}
    return subprocess.run(
        [BASH, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=30, check=False
    )


def _calls(bin_dir: Path) -> list[str]:
    log = bin_dir.parent / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_as_root_it_installs_what_is_missing_without_sudo(machine: Path) -> None:
    """Root on a fresh image (no sudo there) gets apt-get run directly."""
    result = _run(machine, uid=0)
    assert 0 == result.returncode, result.stderr
    assert [INSTALL] == _calls(machine)


def test_a_user_with_sudo_installs_through_sudo(machine: Path) -> None:
    """A non-root user's install goes through sudo."""
    log = machine.parent / "calls.log"
    _tool(machine, "sudo", f'echo "sudo $*" >> {log}; "$@"')
    result = _run(machine, uid=1000)
    assert 0 == result.returncode, result.stderr
    assert [
        f"sudo {INSTALL}",
        INSTALL,
    ] == _calls(machine)


def test_a_user_without_sudo_is_told_what_to_install(machine: Path) -> None:
    """Neither root nor sudo: one line naming the packages, and nothing run."""
    result = _run(machine, uid=1000)
    assert 1 == result.returncode
    assert [] == _calls(machine)
    lines = result.stderr.splitlines()
    assert 1 == len(lines)
    assert (
        "apt-get install -y --no-install-recommends redis-server tmux chromium "
        "fonts-liberation python3-venv" in lines[0]
    )


def test_empty_package_lists_are_updated_before_a_second_try(machine: Path) -> None:
    """A fresh image's first install fails; the script updates the lists and installs."""
    log = machine.parent / "calls.log"
    marker = machine.parent / "updated"
    _tool(
        machine,
        "apt-get",
        f'echo "apt-get $*" >> {log}\n'
        f'[ "$1" = update ] && : > {marker}\n'
        f'[ "$1" = update ] || [ -e {marker} ]',
    )
    result = _run(machine, uid=0)
    assert 0 == result.returncode, result.stderr
    assert [
        INSTALL,
        "apt-get update",
        INSTALL,
    ] == _calls(machine)


def test_nothing_is_installed_when_nothing_is_missing(machine: Path) -> None:
    """With redis-server, tmux, chromium and the venv module present, apt-get is not run."""
    for name in ("redis-server", "tmux", "chromium"):
        _tool(machine, name, "exit 0")
    _tool(machine, "python3", "exit 0")
    result = _run(machine, uid=1000)
    assert 0 == result.returncode, result.stderr
    assert [] == _calls(machine)


def test_the_readme_test_command_is_the_script() -> None:
    """README's test command runs scripts/test, which runs scripts/system-packages."""
    readme = (SCRIPT.parents[1] / "README.md").read_text()
    command = readme.split("<!-- ci:test -->", 1)[1].split("```sh\n", 1)[1].split("\n", 1)[0]
    assert "scripts/test" == command
    assert "scripts/system-packages" in (SCRIPT.parent / "test").read_text()
    assert os.access(SCRIPT.parent / "test", os.X_OK)
