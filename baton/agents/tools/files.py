"""File tools: `Read`, `Write` and `List`, async and confined to the workspace.

Paths are relative to the workspace root; the sandbox refuses anything that leaves it, and
`Write` writes only where the round may (docs/handoffs.md, "Sandbox"). `Read` opens regular
files with a single link only, and checks that before opening: opening a named pipe blocks
until someone writes to it, which would hold a worker thread for ever. Output is bounded:
`Read` pages by lines and cuts very long lines to head and tail, `List` stops at a cap, and
both always say how much there is in total so the model can ask for the rest.

Each call does its file work in one worker-thread call, relative to the directory
descriptors of the sandbox's walk: a folder swapped for a link meanwhile is not followed.
Given a remote store (`storage`, an `ObjectStorage`), the same tools read, write and list its
objects instead, under the same rules and with the same results (`_object_files`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field

from baton._regular_files import read_at
from baton.agents._artifact_io import is_write_leftover, write_at
from baton.agents._dir_walk import DIR_FLAGS
from baton.agents.errors import InvalidArtifactError
from baton.agents.tools._object_files import stored_files
from baton.agents.tools._sandbox import Sandbox
from baton.agents.tools.protocol import Tool, ToolOutcome
from baton.storage.protocol import Storage

DEFAULT_LIMIT: Final = 400
HEAD_TAIL_LINES: Final = 40
MAX_LIMIT: Final = 5000
# A line longer than this (minified JSON is one line) is cut to its head and tail.
MAX_LINE_CHARS: Final = 2000
# One Read result stays below this, whatever `limit` says: about 12K tokens of English.
MAX_OUTPUT_CHARS: Final = 40_000
MAX_FILE_BYTES: Final = 32 * 1024 * 1024


def _clip_line(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    half = MAX_LINE_CHARS // 2
    return f"{line[:half]}[... {len(line) - 2 * half} chars omitted ...]{line[-half:]}"


def _numbered(lines: list[str], first: int) -> list[str]:
    return [f"{number:>6}\t{_clip_line(line)}" for number, line in enumerate(lines, start=first)]


class ReadInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="the file, relative to the workspace root")
    offset: int = Field(1, ge=1, description="the first line to return, 1-based (mode=lines)")
    limit: int | None = Field(
        None,
        ge=1,
        le=MAX_LIMIT,
        description=f"lines to return (default {DEFAULT_LIMIT}); with mode=head_tail, lines "
        f"from each end (default {HEAD_TAIL_LINES})",
    )
    mode: Literal["lines", "head_tail"] = Field(
        "lines",
        description="lines: from offset on; head_tail: the first and last lines of the file, "
        "to see a long file's shape before reading its middle",
    )


class Read:
    """Read a text file by lines; the result always states the file's total size."""

    name = "Read"
    description = (
        "Read a UTF-8 text file in the workspace. Lines are numbered (1-based). Every result "
        "starts with the file's total size in lines and characters. Use offset/limit to read a "
        "range, and mode='head_tail' to see the beginning and end of a long file first. "
        "Paths are relative to the workspace root."
    )
    input_model = ReadInput

    def __init__(self, sandbox: Sandbox, *, storage: Storage | None = None) -> None:
        self._sandbox = sandbox
        self._stored = stored_files(sandbox, storage)

    @property
    def input_schema(self) -> dict[str, Any]:
        return ReadInput.model_json_schema()

    async def run(self, args: ReadInput) -> ToolOutcome:
        if self._stored is None:
            read = await anyio.to_thread.run_sync(self._read, args.path)
        else:
            read = await self._read_stored(args.path)
        if isinstance(read, ToolOutcome):
            return read
        shown, raw = read
        note = ""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", errors="replace")
            note = " (not valid UTF-8: undecodable bytes shown as \ufffd)"
        lines = text.splitlines()
        header = f"{shown}: {len(lines)} lines, {len(text)} chars{note}"
        if not lines:
            return ToolOutcome(f"{header} (empty file)")
        if args.mode == "head_tail":
            return ToolOutcome(_head_tail(header, lines, args.limit or HEAD_TAIL_LINES))
        if args.offset > len(lines):
            return ToolOutcome(
                f"{header}; offset {args.offset} is past the last line", is_error=True
            )
        return ToolOutcome(_page(header, lines, args.offset, args.limit or DEFAULT_LIMIT))

    def _read(self, path: str) -> tuple[str, bytes] | ToolOutcome:
        # One worker-thread call: the walk, the checks and the read share its descriptors.
        with self._sandbox.walk(path) as here:
            shown = self._sandbox.shown(here.resolved)
            missing = _missing(shown)
            if len(here.rest) != 1:
                return missing if here.rest else _is_a_directory(shown)
            try:
                return shown, read_at(here.fd, here.rest[0], shown, MAX_FILE_BYTES)
            except (FileNotFoundError, NotADirectoryError):
                return missing
            except IsADirectoryError:
                return _is_a_directory(shown)
            except ValueError as refused:
                return ToolOutcome(str(refused), is_error=True)

    async def _read_stored(self, path: str) -> tuple[str, bytes] | ToolOutcome:
        assert self._stored is not None
        shown, key = self._stored.key(path)
        if not key:
            return _is_a_directory(shown)
        try:
            raw = await self._stored.read(key, shown, MAX_FILE_BYTES)
        except ValueError as refused:
            return ToolOutcome(str(refused), is_error=True)
        if raw is not None:
            return shown, raw
        return _is_a_directory(shown) if await self._stored.is_folder(key) else _missing(shown)


def _missing(shown: str) -> ToolOutcome:
    return ToolOutcome(
        f"{shown} does not exist; List its directory to see what is there", is_error=True
    )


def _is_a_directory(shown: str) -> ToolOutcome:
    return ToolOutcome(f"{shown} is a directory; use List to see it", is_error=True)


def _page(header: str, lines: list[str], offset: int, limit: int) -> str:
    body: list[str] = []
    used = 0
    last = min(offset - 1 + limit, len(lines))
    for index in range(offset - 1, last):
        line = _numbered([lines[index]], index + 1)[0]
        if body and used + len(line) > MAX_OUTPUT_CHARS:
            last = index
            break
        body.append(line)
        used += len(line) + 1
    note = f"lines {offset}-{last} of {len(lines)}"
    if last < len(lines):
        note += f"; continue with offset={last + 1}"
    return "\n".join([f"{header}; {note}", *body])


def _head_tail(header: str, lines: list[str], each: int) -> str:
    if len(lines) <= 2 * each:
        return "\n".join([f"{header}; all lines", *_numbered(lines, 1)])
    head, tail = lines[:each], lines[-each:]
    first_omitted, last_omitted = each + 1, len(lines) - each
    omitted_chars = sum(len(line) + 1 for line in lines[each:-each])
    marker = (
        f"[... lines {first_omitted}-{last_omitted} omitted ({omitted_chars} chars); "
        f"read them with offset={first_omitted} and a limit ...]"
    )
    note = f"head_tail: lines 1-{each} and {last_omitted + 1}-{len(lines)}"
    return "\n".join(
        [f"{header}; {note}", *_numbered(head, 1), marker, *_numbered(tail, last_omitted + 1)]
    )


ContentCheck = Callable[[str, str], bool]
"""Judges what Write is about to write at a workspace-relative path: True when the place has
a schema the content was checked against (no JSON warning then), False when it has none;
raises `InvalidArtifactError` when the content does not fit, and nothing is written."""


class WriteInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="the file, relative to the workspace root")
    content: str = Field(description="the whole new content of the file")


class Write:
    """Write a whole file atomically; an iteration's known artifacts are validated first."""

    name = "Write"
    input_model = WriteInput

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        storage: Storage | None = None,
        check: ContentCheck | None = None,
        check_note: str = "",
    ) -> None:
        self._sandbox = sandbox
        self._stored = stored_files(sandbox, storage)
        self._check = check
        self.description = (
            "Write a whole text file in the workspace, atomically: readers see the old file "
            "or the new one, never half of it. Parent directories are created. "
            f"{check_note}{' ' if check_note else ''}Paths are relative to the workspace root. "
            "Write writes only under the scenario's folder (scenarios/<name>/) and folders "
            "the workspace allows; a refusal says where."
        )

    @property
    def input_schema(self) -> dict[str, Any]:
        return WriteInput.model_json_schema()

    async def run(self, args: WriteInput) -> ToolOutcome:
        if self._stored is None:
            written = await anyio.to_thread.run_sync(self._write, args)
        else:
            written = await self._write_stored(args)
        if isinstance(written, ToolOutcome):
            return written
        shown, checked = written
        text = f"wrote {shown}: {len(args.content.splitlines())} lines, {len(args.content)} chars"
        if not checked and shown.endswith(".json"):
            try:
                json.loads(args.content)
            except ValueError as error:
                text += f" (warning: this is not valid JSON: {error})"
        return ToolOutcome(text)

    def _write(self, args: WriteInput) -> tuple[str, bool] | ToolOutcome:
        # One worker-thread call: the file lands in the directory the walk checked, by
        # descriptor, whatever its path leads to by then (docs/handoffs.md, "Sandbox").
        with self._sandbox.walk_for_write(args.path) as here:
            shown = self._sandbox.shown(here.resolved)
            if here.is_directory():
                return _not_a_file(shown)
            checked = self._checked(shown, args.content)
            if isinstance(checked, ToolOutcome):
                return checked
            write_at(*here.enter_missing(), args.content.encode())
        return shown, checked

    async def _write_stored(self, args: WriteInput) -> tuple[str, bool] | ToolOutcome:
        # Judged, checked, then one PUT: a refused or invalid write leaves nothing in the store.
        assert self._stored is not None
        shown, key = self._stored.key(args.path, for_write=True)
        if await self._stored.is_folder(key):
            return _not_a_file(shown)
        checked = await anyio.to_thread.run_sync(self._checked, shown, args.content)
        if isinstance(checked, ToolOutcome):
            return checked
        await self._stored.write(key, args.content.encode())
        return shown, checked

    def _checked(self, shown: str, content: str) -> bool | ToolOutcome:
        """Whether `check` knew the place's schema; its refusal as the tool's outcome."""
        if self._check is None:
            return False
        try:
            return self._check(shown, content)
        except InvalidArtifactError as error:
            return ToolOutcome(f"nothing written: {error}", is_error=True)


def _not_a_file(shown: str) -> ToolOutcome:
    return ToolOutcome(f"{shown} is a directory; give a file path", is_error=True)


class ListInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(".", description="the directory, relative to the workspace root")
    recursive: bool = Field(False, description="also list every subdirectory's entries")
    max_entries: int = Field(200, ge=1, le=MAX_LIMIT, description="stop after this many entries")


class List:
    """List a directory, optionally recursively, up to a cap."""

    name = "List"
    description = (
        "List a directory in the workspace: subdirectories end in '/', files show their size "
        "in bytes, symbolic links end in '@'. recursive=true walks subdirectories (not links) "
        "up to max_entries. Paths are relative to the workspace root; '.' is the root."
    )
    input_model = ListInput

    def __init__(self, sandbox: Sandbox, *, storage: Storage | None = None) -> None:
        self._sandbox = sandbox
        self._stored = stored_files(sandbox, storage)

    @property
    def input_schema(self) -> dict[str, Any]:
        return ListInput.model_json_schema()

    async def run(self, args: ListInput) -> ToolOutcome:
        if self._stored is None:
            return await anyio.to_thread.run_sync(self._list, args)
        shown, key = self._stored.key(args.path)
        entries, complete = await self._stored.entries(
            key, recursive=args.recursive, cap=args.max_entries
        )
        if key and not entries:
            # A store has no empty folders: a key with nothing under it is a file or nothing.
            return _not_a_folder(shown, exists=await self._stored.storage.exists(key))
        return _listed(shown, args, entries, complete)

    def _list(self, args: ListInput) -> ToolOutcome:
        # The whole listing in one worker-thread call, every directory opened relative to
        # its parent's descriptor without following links.
        with self._sandbox.walk(args.path) as here:
            shown = self._sandbox.shown(here.resolved)
            if here.rest:
                return _not_a_folder(shown, exists=here.final() is not None)
            listing = _Listing(self._sandbox, args, base=here.resolved)
            complete = listing.walk(here.fd, here.resolved)
            entries = listing.out
        return _listed(shown, args, entries, complete)


def _not_a_folder(shown: str, *, exists: bool) -> ToolOutcome:
    if not exists:
        return ToolOutcome(f"{shown} does not exist", is_error=True)
    return ToolOutcome(f"{shown} is a file; use Read to see it", is_error=True)


def _listed(shown: str, args: ListInput, entries: list[str], complete: bool) -> ToolOutcome:
    header = f"{shown}/: {len(entries)} entries" + (" (recursive)" if args.recursive else "")
    if not entries:
        return ToolOutcome(f"{shown}/: empty directory")
    if not complete:
        header += (
            f"; stopped at max_entries={args.max_entries}: list a subdirectory or raise "
            "max_entries to see the rest"
        )
    return ToolOutcome("\n".join([header, *entries]))


@dataclass
class _Listing:
    """One List call's entries, gathered on a worker thread by directory descriptor."""

    sandbox: Sandbox
    args: ListInput
    base: tuple[str, ...]
    """The listed directory's components: entries are shown relative to it."""
    out: list[str] = field(default_factory=list)

    def walk(self, directory: int, parts: tuple[str, ...]) -> bool:
        """Add the entries of the directory open as `directory` (at `parts` from the root);
        False once at the cap."""
        below = parts[len(self.base) :]
        prefix = "".join(f"{name}/" for name in below)
        with os.scandir(directory) as scan:
            children = sorted(scan, key=lambda child: child.name)
        for child in children:
            if self.sandbox.is_reserved((*parts, child.name)) or is_write_leftover(child.name):
                continue  # baton's own, or the temp file of a write a killed process left
            if len(self.out) >= self.args.max_entries:
                return False
            shown = f"{prefix}{child.name}"
            try:
                if child.is_symlink():
                    self.out.append(f"{shown}@")
                elif child.is_dir(follow_symlinks=False):
                    self.out.append(f"{shown}/")
                    if self.args.recursive and not self.walk_into(directory, parts, child.name):
                        return False
                else:
                    size = child.stat(follow_symlinks=False).st_size
                    self.out.append(f"{shown}  ({size} bytes)")
            except FileNotFoundError:
                continue  # removed since the directory was read
        return True

    def walk_into(self, directory: int, parts: tuple[str, ...], name: str) -> bool:
        """`walk` the subdirectory `name`, opened without following a link."""
        try:
            child = os.open(name, DIR_FLAGS, dir_fd=directory)
        except OSError:
            return True  # swapped for a link or removed since it was listed: not walked
        try:
            return self.walk(child, (*parts, name))
        finally:
            os.close(child)


def file_tools(
    sandbox: Sandbox,
    *,
    storage: Storage | None = None,
    check: ContentCheck | None = None,
    check_note: str = "",
) -> list[Tool[Any]]:
    """`Read`, `Write` and `List`, sharing one sandbox, over the workspace folder or, given a
    remote `storage`, its objects; `check` and `check_note` go to `Write`."""
    return [
        Read(sandbox, storage=storage),
        Write(sandbox, storage=storage, check=check, check_note=check_note),
        List(sandbox, storage=storage),
    ]
