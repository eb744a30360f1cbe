"""Workspace confinement for every path a model hands a tool.

A path is refused when it has a `..` component, is absolute and outside the workspace, resolves
outside the workspace through a symbolic link (dangling links included), or enters a directory
the runtime keeps for itself (`.baton/`: journals, logs, the control socket). A refusal raises
`SandboxViolationError`, whose message says why and what to send instead.

The check resolves links when it runs; a link swapped between the check and the file operation
is outside what this guards against (the workspace is the agents' own, not an adversary's).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

import anyio

from baton.errors import SandboxViolationError

RESERVED = (".baton",)


class Sandbox:
    """Maps model-supplied paths to real paths inside one workspace, or refuses them."""

    def __init__(self, workspace: Path, *, reserved: Iterable[str] = RESERVED) -> None:
        # Resolved once so containment compares real paths (the workspace may sit behind a link).
        self.root = Path(os.path.realpath(workspace))
        self.reserved = frozenset(reserved)

    async def resolve(self, path: str) -> Path:
        """The real absolute path `path` names inside the workspace; raise if it is refused."""
        if not path.strip():
            raise SandboxViolationError(
                path, "the path is empty; give one relative to the workspace root, e.g. '.'"
            )
        if "\0" in path:
            raise SandboxViolationError(path, "the path contains a NUL character")
        candidate = Path(path)
        if ".." in candidate.parts:
            raise SandboxViolationError(
                path,
                "'..' is not allowed; give the path from the workspace root without '..'",
            )
        real = Path(await anyio.to_thread.run_sync(os.path.realpath, self.root / candidate))
        if not real.is_relative_to(self.root):
            if candidate.is_absolute():
                reason = "absolute path outside the workspace; give a path relative to its root"
            else:
                reason = "a symbolic link on this path leads outside the workspace"
            raise SandboxViolationError(path, reason)
        parts = real.relative_to(self.root).parts
        if parts and parts[0] in self.reserved:
            raise SandboxViolationError(
                path, f"'{parts[0]}/' is reserved for the runtime; tools cannot use it"
            )
        return real

    def relative(self, real: Path) -> str:
        """A resolved path as the model should write it: relative to the root, '/'-separated."""
        relative = real.relative_to(self.root)
        return PurePosixPath(*relative.parts).as_posix() if relative.parts else "."

    def is_reserved(self, real: Path) -> bool:
        """Whether a resolved path lies in a reserved directory (List skips those)."""
        parts = real.relative_to(self.root).parts
        return bool(parts) and parts[0] in self.reserved
