"""System prompt files a workspace supplies: baton.toml's `system_prompt` and a scenario's
`prompts/<role>.md` (docs/handoffs.md, "Sandbox").

Each must be a regular file inside the workspace: a path that leaves it (absolute, `..`, or a
symbolic link pointing out) would let a configuration read any file the process can, and a
named pipe would block the start for ever. A refusal is one `ConfigError` line naming the key
or the file.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from baton._regular_files import read_regular
from baton._write_rules import SCENARIOS_DIR
from baton.errors import ConfigError
from baton.storage.bounded import read_bounded
from baton.storage.local import remote_store
from baton.storage.protocol import Storage

PROMPTS_DIR = "prompts"
MAX_PROMPT_BYTES = 4 * 1024 * 1024
"""A prompt file larger than this is refused before it is read: it could not fit a context
window (about a million tokens) anyway."""


def _refuse(key: str, value: str | Path, problem: str) -> ConfigError:
    named = key if key == Path(value).as_posix() else f"{key} = {str(value)!r}"
    return ConfigError(f"{named}: {problem}")


def path_problem(value: str | Path) -> str | None:
    """What is wrong with `value` as a workspace-relative prompt path, judged by its spelling."""
    path = Path(value)
    if path.is_absolute():
        return "an absolute path; give one relative to the workspace root"
    if ".." in path.parts:
        return "contains '..'; give the path from the workspace root without '..'"
    return None


def read_prompt_file(workspace: Path, value: str | Path, *, key: str) -> str:
    """The text of the prompt file `value` (workspace-relative) after every check above."""
    problem = path_problem(value)
    if problem is not None:
        raise _refuse(key, value, problem)
    root = Path(os.path.realpath(workspace))
    real = Path(os.path.realpath(root / value))
    if not real.is_relative_to(root):
        raise _refuse(key, value, f"a symbolic link leads outside the workspace, to {real}")
    if os.path.isdir(real):
        raise _refuse(key, value, "is a directory, not a prompt file")
    shown = Path(value).as_posix()
    try:
        # Judged by its `stat`, opened without blocking (a named pipe is refused at once
        # instead of waiting for a writer) and checked again once open.
        data = read_regular(real, shown, MAX_PROMPT_BYTES)
    except ValueError as exc:
        raise _refuse(key, value, str(exc).removeprefix(f"{shown} ")) from None
    except OSError as exc:
        raise _refuse(key, value, f"cannot be read ({exc.strerror or exc})") from None
    return _text(data, key, value)


def _text(data: bytes, key: str, value: str | Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refuse(key, value, f"is not UTF-8 text (offset {exc.start})") from None


def scenario_prompt(workspace: Path, scenario: str, role: str) -> str | None:
    """`scenarios/<scenario>/prompts/<role>.md` if there is anything at that path, else None."""
    relative = Path(SCENARIOS_DIR, scenario, PROMPTS_DIR, f"{role}.md")
    if not os.path.lexists(workspace / relative):
        return None
    return read_prompt_file(workspace, relative, key=relative.as_posix())


async def read_scenario_prompt(
    workspace: Path, storage: Storage | None, scenario: str, role: str
) -> str | None:
    """`scenario_prompt`, from the workspace folder, or from a remote store (the object the
    scenario's submit stored there: docs/storage.md, "Scenario inputs"), judged the same:
    within `MAX_PROMPT_BYTES`, UTF-8, a `ConfigError` naming its key."""
    remote = remote_store(storage)
    if remote is None:
        return await anyio.to_thread.run_sync(scenario_prompt, workspace, scenario, role)
    key = Path(SCENARIOS_DIR, scenario, PROMPTS_DIR, f"{role}.md").as_posix()
    try:
        data = await read_bounded(remote, key, MAX_PROMPT_BYTES)
    except ValueError as exc:
        raise _refuse(key, key, str(exc)) from None
    return None if data is None else _text(data, key, key)


def check_scenario_prompts(workspace: Path, scenario: str) -> None:
    """Refuse a scenario whose `prompts/*.md` are not regular files inside the workspace."""
    folder = workspace / SCENARIOS_DIR / scenario / PROMPTS_DIR
    if not folder.is_dir():
        return
    for entry in sorted(folder.iterdir()):
        if entry.suffix == ".md":
            scenario_prompt(workspace, scenario, entry.stem)
