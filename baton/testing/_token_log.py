"""Token-log helpers for tests: capture the records a process emits, or read a log file back."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import baton.pipeline.records  # noqa: F401 - every layer's records, registered: what is read
from baton.runtime.log_files import rotated_files
from baton.runtime.token_log import TOKEN_LOG, capture_sinks


@contextmanager
def capture_token_log() -> Iterator[list[dict[str, Any]]]:
    """Collect every record any `TokenLog` in the process emits while the block runs.

    The list fills as records are emitted, in order, each the dict that goes to the file
    (validated by the schema, `ts` included); a runtime without a workspace is seen too.
    Blocks nest: each sees what was emitted while it was open::

        with capture_token_log() as records:
            async with Runtime.open() as rt:
                ...
        assert ["message.dead_lettered"] == [r["event"] for r in records]
    """
    records: list[dict[str, Any]] = []
    capture_sinks.append(records)
    try:
        yield records
    finally:
        # By identity: another block's list may be equal to this one (both empty, say).
        for index, sink in enumerate(capture_sinks):
            if sink is records:
                del capture_sinks[index]
                break


def read_token_log(
    path_or_workspace: str | os.PathLike[str], *, skip_torn: bool = False
) -> list[dict[str, Any]]:
    """Every record of a token log file, parsed: the rotated files first, oldest first.

    `path_or_workspace` is the log file (`tokens.jsonl`; its rotated `tokens.jsonl.N` beside
    it are read before it, highest N first) or a workspace directory, meaning
    `<workspace>/.baton/logs/tokens.jsonl`. A line that is not a JSON object raises
    `ValueError` naming the file and line, unless `skip_torn` (a process killed mid-write
    leaves such a line) skips it. `FileNotFoundError` if there is no log at all.
    """
    path = Path(path_or_workspace)
    if path.is_dir():
        path = path / TOKEN_LOG
    files = [*rotated_files(path), path] if path.exists() else rotated_files(path)
    if not files:
        raise FileNotFoundError(f"no token log at {path}")
    records: list[dict[str, Any]] = []
    for file in files:
        # Split on b"\n" only, as the writer and `baton tail` do: a record may hold U+2028.
        for number, raw in enumerate(file.read_bytes().split(b"\n"), start=1):
            line = raw.decode("utf-8", errors="replace").rstrip("\r")
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                record = None
            if isinstance(record, dict):
                records.append(record)
            elif not skip_torn:
                raise ValueError(f"{file}:{number} is not a JSON record: {line[:200]!r}")
    return records
