"""Workspace confinement for every path a model hands a tool (docs/handoffs.md, "Sandbox").

A path is refused when it has a `..` component, is absolute and outside the workspace, leads
outside the workspace through a symbolic link (dangling links included), or enters a
directory the runtime keeps for itself (`.baton/`: journals, logs, the control socket). A
refusal raises `SandboxViolationError`, whose message says why and what to send instead.

Writes are narrower than reads: a `Write` lands only under the folder of the scenario the
round works on (`scenarios/<name>/`, bound with `scenario_scope` by the agent loop) and the
workspace's configured `[sandbox] write_paths`; the `main` conversation, which has no scenario,
writes only to those. Whatever the configuration, code that runs and baton's own files are
never written (`baton._write_rules`), judged on the path as spelled and as resolved, so a link
cannot lead a write out of the allowed tree.

Agents cannot make links, but any other process on the machine can swap a folder for one
while a tool runs. So a path is never resolved first and opened by name afterwards: `walk`
opens it component by component from a descriptor of the workspace root
(`baton.agents._dir_walk`), the checks judge the components that walk traversed, and the
tools read, write and list relative to the descriptors it holds. A remote store, which has
neither links nor descriptors, gets the rules that need no file system alone (`key`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path, PurePosixPath

import anyio

from baton._write_rules import SCENARIOS_DIR, never_written, write_path_problem
from baton.agents._dir_walk import Walk, inside, walk
from baton.agents.errors import SandboxViolationError
from baton.errors import ConfigError

RESERVED = (".baton",)
# A scenario name that is one plain folder name: `..` or `a/b` must not widen the write scope.
_FOLDER_NAME = re.compile(r"^(?!\.{1,2}$)[A-Za-z0-9_.-]+$")

_scenario: ContextVar[str | None] = ContextVar("baton_sandbox_scenario", default=None)


@contextmanager
def scenario_scope(scenario: str | None) -> Iterator[None]:
    """Within the block, tools write for `scenario` (None: a conversation without one).

    A context variable, so the tools a round runs concurrently all see their round's scenario.
    """
    token = _scenario.set(scenario)
    try:
        yield
    finally:
        _scenario.reset(token)


def current_scenario() -> str | None:
    """The scenario the current round works on (None: a conversation without one)."""
    return _scenario.get()


class Sandbox:
    """Walks model-supplied paths inside one workspace, or refuses them."""

    def __init__(
        self,
        workspace: Path,
        *,
        reserved: Iterable[str] = RESERVED,
        write_paths: Iterable[str] = (),
    ) -> None:
        # Resolved once so containment compares real paths (the workspace may sit behind a link).
        self.root = Path(os.path.realpath(workspace))
        # An absolute path or link target may spell the root either way.
        self._roots = tuple(
            dict.fromkeys(map(PurePosixPath, (self.root, Path(workspace).absolute())))
        )
        self.reserved = frozenset(reserved)
        entries = tuple(write_paths)
        problems = [p for p in map(write_path_problem, entries) if p is not None]
        if problems:
            raise ConfigError("invalid sandbox.write_paths: " + "; ".join(problems))
        self.write_paths = tuple(PurePosixPath(entry).parts for entry in entries)

    @contextmanager
    def walk(self, path: str) -> Iterator[Walk]:
        """Walk to `path` for reading (blocking: run it on a worker thread); raise
        `SandboxViolationError` if it is refused. The walk's descriptors close on exit."""
        with walk(self.root, self._components(path), path, aliases=self._roots[1:]) as here:
            self._refuse_reserved(path, here.resolved)
            yield here

    @contextmanager
    def walk_for_write(self, path: str) -> Iterator[Walk]:
        """`walk`, then refuse what this round may not write; the error says where it may.

        Judged on the components the walk traversed: what gets written is what was judged.
        """
        with self.walk(path) as here:
            # As spelled too: a link named `x.pth` is refused for its name.
            self._refuse_write(path, self._components(path), here.resolved)
            yield here

    def key(self, path: str) -> tuple[str, ...]:
        """The components of `path` as a key of a store with no links and no descriptors
        (docs/handoffs.md, "In a remote store"): the rules that need no file system, the
        same refusals with the same messages as `walk`'s."""
        parts = self._components(path)
        self._refuse_reserved(path, parts)
        return parts

    def key_for_write(self, path: str) -> tuple[str, ...]:
        """`key`, then refuse what this round may not write, as `walk_for_write` does."""
        parts = self.key(path)
        self._refuse_write(path, parts)
        return parts

    def _refuse_reserved(self, path: str, parts: tuple[str, ...]) -> None:
        if self.is_reserved(parts):
            raise SandboxViolationError(
                path, f"'{parts[0]}/' is reserved for the runtime; tools cannot use it"
            )

    def _refuse_write(self, path: str, *spellings: tuple[str, ...]) -> None:
        """Refuse a write judged on each spelling; the last is what gets written."""
        for candidate in spellings:
            reason = never_written(candidate)
            if reason is not None:
                raise SandboxViolationError(
                    path, f"agents never write this ({reason}); {self.where_to_write()}"
                )
        parts = spellings[-1]
        if not any(parts[: len(root)] == root for root in self.write_roots()):
            raise SandboxViolationError(path, self.where_to_write())

    async def resolve(self, path: str) -> Path:
        """The real absolute path `path` names inside the workspace; raise if it is refused.

        For naming a path only: what is there may change once this returns, so files are
        read, written and listed through `walk`, never through this path.
        """

        def resolved() -> Path:
            with self.walk(path) as here:
                return self.root.joinpath(*here.resolved)

        return await anyio.to_thread.run_sync(resolved)

    def _components(self, path: str) -> tuple[str, ...]:
        # The checks that need no file system: empty, NUL, `..`, absolute and outside.
        if not path.strip():
            raise SandboxViolationError(
                path, "the path is empty; give one relative to the workspace root, e.g. '.'"
            )
        if "\0" in path:
            raise SandboxViolationError(path, "the path contains a NUL character")
        candidate = PurePosixPath(path)
        if ".." in candidate.parts:
            raise SandboxViolationError(
                path,
                "'..' is not allowed; give the path from the workspace root without '..'",
            )
        if not candidate.is_absolute():
            return candidate.parts
        below = inside(candidate, self._roots)
        if below is None:
            raise SandboxViolationError(
                path, "absolute path outside the workspace; give a path relative to its root"
            )
        return below

    def write_roots(self) -> list[tuple[str, ...]]:
        """The workspace-relative folders (or files) the current round may write under."""
        scenario = _scenario.get()
        roots = [(SCENARIOS_DIR, scenario)] if scenario and _FOLDER_NAME.match(scenario) else []
        return roots + [root for root in self.write_paths if root not in roots]

    def where_to_write(self) -> str:
        """For a refused write: where this round may write instead."""
        scenario = _scenario.get()
        places = []
        for root in self.write_roots():
            own = root == (SCENARIOS_DIR, scenario)
            why = "this scenario's folder" if own else "baton.toml's [sandbox] write_paths"
            places.append(f"{'/'.join(root)}/ ({why})")
        if not places:
            return (
                "this conversation belongs to no scenario and baton.toml's [sandbox] "
                "write_paths names no folder, so Write may not write anywhere here"
            )
        return "Write may write only under " + ", ".join(places)

    def relative(self, real: Path) -> str:
        """A resolved path as the model should write it: relative to the root, '/'-separated."""
        return self.shown(real.relative_to(self.root).parts)

    @staticmethod
    def shown(parts: Sequence[str]) -> str:
        """Workspace-relative components as the model should write them ('.': the root)."""
        return PurePosixPath(*parts).as_posix() if parts else "."

    def is_reserved(self, parts: Sequence[str]) -> bool:
        """Whether a resolved path (workspace-relative components) lies in a reserved
        directory (List skips those)."""
        return bool(parts) and parts[0] in self.reserved
