"""README stays true: its Python examples run and its test command is what CI runs."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from baton.pipeline.config import parse_config

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_python_examples_run() -> None:
    """Every ```python block in README runs to completion in a fresh interpreter."""
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)
    assert blocks, "README has no Python example"
    for block in blocks:
        result = subprocess.run(
            [sys.executable, "-c", block], capture_output=True, text=True, timeout=60, check=False
        )
        assert 0 == result.returncode, result.stderr


def test_ci_runs_both_readme_commands() -> None:
    """`.ci/run` takes the install-and-test and the main-job commands from README's marked
    blocks; the Quickstart has exactly those two commands."""
    quickstart = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"<!-- ci:(\w+) -->\n```sh\n(.+)\n```", quickstart)
    assert ["main", "test"] == sorted(name for name, _ in commands)
    assert 2 == quickstart.count("```sh")
    found = dict(commands)
    assert "scripts/test" == found["test"]
    script = (ROOT / "scripts" / "test").read_text(encoding="utf-8")
    assert "pip install -e '.[dev]'" in script
    assert "exec .venv/bin/pytest" in script
    assert "baton run --submit leave_application" in found["main"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "readme_command test" in ci
    assert "readme_command main" in ci


def test_toml_examples_are_valid_config() -> None:
    """README's `baton.toml` example is accepted as it stands, and means what it says."""
    blocks = re.findall(r"```toml\n(.*?)```", README, flags=re.DOTALL)
    assert 1 == len(blocks)
    config = parse_config(tomllib.loads(blocks[0]))
    execute = config.agent("execute")
    assert (1_000_000, 700_000, 5) == (
        execute.context_window,
        execute.compact_threshold,
        execute.keep_recent_steps,
    )
