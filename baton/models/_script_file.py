"""Reading an offline script (docs/scenarios.md, "Offline script"): a regular file, opened
without blocking (or an object of the store, its bytes read already), nested no deeper than
`MAX_DEPTH`, JSON or TOML; and naming where a script that does not validate is wrong, by actor
and turn.

Every refusal is a `ScriptFileError`, the caller's mistake: an agent whose model meets one
fails its round once with that line instead of restarting and reading the file again.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from baton._regular_files import read_regular
from baton.errors import validation_problems
from baton.models._nesting import MAX_DEPTH, json_too_deep, too_deep_at
from baton.models.errors import ScriptFileError

MAX_SCRIPT_BYTES = 64 * 1024 * 1024
"""A script larger than this is refused before it is read (a 20-turn script is a few KB)."""

_LISTS = {"turns": "turn", "compactions": "compaction", "task_summaries": "task summary"}
_TAGS = ("text", "tool_use")


def read_script_data(path: Path, shown: str) -> Any:
    """The parsed contents of the script file at `path` (`.toml` is TOML, anything else
    JSON), named `shown` in errors. Blocks: call it while setting up or from a worker thread."""
    if os.path.isdir(path):
        raise ScriptFileError(shown, "is a directory, not a script file")
    try:
        # The link resolved first: read_regular opens without following one (a script may
        # well be a link to a shared file), and refuses a FIFO without waiting for a writer.
        raw = read_regular(Path(os.path.realpath(path)), shown, MAX_SCRIPT_BYTES)
    except FileNotFoundError:
        raise ScriptFileError(shown, "there is no such file") from None
    except ValueError as exc:
        raise ScriptFileError(shown, str(exc).removeprefix(f"{shown} ")) from None
    except OSError as exc:
        raise ScriptFileError(shown, f"cannot be read ({exc.strerror or exc})") from None
    return parse_script_data(raw, shown, toml=path.suffix == ".toml")


def parse_script_data(raw: bytes, shown: str, *, toml: bool) -> Any:
    """The parsed contents of a script's bytes (an object of the store, or a file's), named
    `shown` in errors: within `MAX_SCRIPT_BYTES`, UTF-8, nested no deeper than `MAX_DEPTH`."""
    if len(raw) > MAX_SCRIPT_BYTES:
        raise ScriptFileError(shown, f"is {len(raw)} bytes, over the {MAX_SCRIPT_BYTES} byte limit")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScriptFileError(shown, f"is not UTF-8 text (offset {exc.start})") from None
    return _parse_toml(text, shown) if toml else _parse_json(raw, text, shown)


def _parse_json(raw: bytes, text: str, shown: str) -> Any:
    line = json_too_deep(raw)
    if line is not None:
        raise ScriptFileError(shown, f"line {line}: {_too_deep()}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScriptFileError(shown, f"line {exc.lineno}: not JSON ({exc.msg})") from None


def _parse_toml(text: str, shown: str) -> Any:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScriptFileError(shown, f"not TOML ({exc})") from None
    except RecursionError:
        # The TOML parser recurses once per level, and its stack runs out only a few
        # hundred levels down, well past MAX_DEPTH: what it did parse is measured below.
        raise ScriptFileError(shown, _too_deep()) from None
    deep = too_deep_at(data)
    if deep is not None:
        # The first levels say where; the hundred that follow would say nothing more.
        raise ScriptFileError(shown, f"{where(deep[:6])}: {_too_deep()}")
    return data


def _too_deep() -> str:
    return f"arrays and objects nest more than {MAX_DEPTH} levels deep; flatten them"


def where(loc: tuple[str | int, ...]) -> str:
    """A location in a script, in its reader's words: `actor 'init' turn 2: content.0.text`."""
    if len(loc) < 2 or loc[0] != "actors":
        return ".".join(map(str, loc)) or "(whole file)"
    named = f"actor {loc[1]!r}"
    rest = loc[2:]
    if rest and isinstance(rest[0], int):  # an actor's entry written as its list of turns
        rest = ("turns", *rest)
    if len(rest) >= 2 and rest[0] in _LISTS and isinstance(rest[1], int):
        named += f" {_LISTS[str(rest[0])]} {rest[1]}"
        rest = rest[2:]
        # A block's location repeats its `type` (the union's tag): content.0.text.text.
        if len(rest) >= 3 and rest[0] == "content" and rest[2] in _TAGS:
            rest = (*rest[:2], *rest[3:])
    return f"{named}: {'.'.join(map(str, rest))}" if rest else named


def invalid_script(error: ValidationError) -> str:
    """What is wrong with a script that did not validate: its first three problems, each
    located by actor and turn."""
    problems = []
    for item in error.errors(include_url=False)[:3]:
        loc = tuple(item["loc"])
        if item["type"] == "extra_forbidden":
            problems.append(f"{where(loc)}: unknown key")
            continue
        dotted = ".".join(map(str, loc))
        problem = validation_problems([item], show_input=True)[0].removeprefix(f"{dotted}: ")
        problems.append(f"{where(loc)}: {problem}")
    return "; ".join(problems)
