"""What an agent's `Write` never touches, whatever the configuration (docs/handoffs.md, "Sandbox").

Pure functions over path components, shared by the agents' sandbox (every write) and the
`[sandbox]` settings (every configured `write_paths` entry), so the two cannot disagree.
Names compare case-insensitively: on a case-insensitive filesystem `.GIT/` is `.git/`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

# Folders whose files run (a virtualenv's site-packages, git hooks) or are baton's own state.
NEVER_WRITTEN_DIRS = (".venv", ".git", ".baton")
# baton's configuration: a write could widen these very rules.
NEVER_WRITTEN_FILES = ("baton.toml",)
# Python runs the lines of a .pth file in site-packages at every start.
NEVER_WRITTEN_SUFFIXES = (".pth",)
SCENARIOS_DIR = "scenarios"
# A scenario's earlier runs, each in `runs/<run>/` (baton/pipeline/run_archive.py).
RUNS_DIR = "runs"


def never_written(parts: Sequence[str]) -> str | None:
    """Why the workspace-relative path `parts` may never be written, or None."""
    folded = [part.casefold() for part in parts]
    for name in NEVER_WRITTEN_DIRS:
        if name in folded:
            return f"'{name}/' holds code that runs or baton's own state"
    if folded and folded[-1] in NEVER_WRITTEN_FILES:
        return f"'{parts[-1]}' is baton's configuration"
    if folded and folded[-1].endswith(NEVER_WRITTEN_SUFFIXES):
        return "Python runs '*.pth' files when it starts"
    # A scenario's own inputs, its `scenario.toml` (approval, policy, budgets), `prompts/` and
    # `recording.jsonl` (docs/recordings.md): an agent that rewrote them could approve its own
    # designs, rewrite its instructions or script its own replayed replies.
    in_scenario = len(folded) >= 3 and folded[0] == SCENARIOS_DIR
    inputs = (["scenario.toml"], ["recording.jsonl"])
    if in_scenario and (folded[2] == "prompts" or folded[2:] in inputs):
        return f"'{parts[2]}' in a scenario's folder is its user's input"
    # `runs/` keeps the scenario's earlier runs as they ended (docs/handoffs.md, "Earlier
    # runs"): a write there would rewrite the record a later run is compared with.
    if in_scenario and folded[2] == RUNS_DIR:
        return f"'{parts[2]}/' in a scenario's folder is the record of its earlier runs"
    return None


def write_path_problem(entry: str) -> str | None:
    """What is wrong with `entry` as a configured write path, or None if it may be one."""
    if "\0" in entry:
        return f"{entry!r} contains a NUL character"
    path = PurePosixPath(entry)
    if path.is_absolute():
        return f"{entry!r} is absolute; give a folder relative to the workspace root"
    if ".." in path.parts:
        return f"{entry!r} contains '..'; give a folder inside the workspace"
    if not path.parts:
        return f"{entry!r} is the whole workspace; name a folder in it, e.g. 'notes/'"
    reason = never_written(path.parts)
    if reason is not None:
        return f"{entry!r} is never writable: {reason}"
    return None
