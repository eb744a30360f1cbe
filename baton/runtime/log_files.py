"""Where the process log and the token log are, and a log's rotated files: the paths alone,
without the writers (structlog, aiofiles), so that `baton tail` and the command line's help
find them without loading what writes them (docs/architecture.md, "What a command imports").
"""

from __future__ import annotations

import glob
from pathlib import Path

PROCESS_LOG = Path(".baton") / "logs" / "baton.jsonl"
"""The process log of `baton run` and `baton worker`, relative to the workspace."""

TOKEN_LOG = Path(".baton") / "logs" / "tokens.jsonl"
"""The token log, relative to the workspace (docs/token-log.md)."""


def rotated_files(path: Path) -> list[Path]:
    """The rotated files `path.N` beside the token log at `path`, oldest (highest N) first:
    rotation renames `.1` to `.2` and so on (docs/token-log.md)."""
    prefix = f"{path.name}."
    numbered = [
        (int(suffix), candidate)
        for candidate in path.parent.glob(f"{glob.escape(path.name)}.*")
        if (suffix := candidate.name.removeprefix(prefix)).isascii()
        and suffix.isdigit()
        and candidate.is_file()
    ]
    return [candidate for _, candidate in sorted(numbered, reverse=True)]
