"""What a command says when no runtime answers on its workspace's control socket: the words
of `NoRuntimeError`, kept apart from the error tree because `baton tell` and `baton ask` say
them without loading it (docs/architecture.md, "What a command imports")."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


def run_command(workspace: Path | str) -> str:
    """The command that starts a runtime in `workspace`."""
    return "baton run" if str(workspace) == "." else f"baton run --workspace {workspace}"


def no_runtime_message(workspace: Path | str) -> str:
    """What to tell a user whose command found no runtime in `workspace`."""
    return f"no runtime in {workspace} — start one with `{run_command(workspace)}`"
