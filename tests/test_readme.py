"""README stays true: its Python examples run and its test command is what CI runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

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


def test_ci_runs_the_readme_test_command() -> None:
    """`.ci/run` takes its install-and-test command from README's marked block."""
    marked = re.search(r"<!-- ci:test -->\n```sh\n(.+)\n```", README)
    assert marked is not None
    command = marked.group(1)
    assert "pip install -e '.[dev]'" in command
    assert command.endswith("pytest")
    assert "<!-- ci:test -->" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
