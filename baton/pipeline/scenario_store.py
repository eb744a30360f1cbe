"""Where the Scheduler keeps its scenario records: `ScenarioStore`, and the file store.

One record per scenario, saved after every transition and read back whole at start. The
file store (`FileScenarioStore`, the default) keeps `<workspace>/.baton/scheduler/<name>.json`;
with a Redis mailbox the records live in Redis (`redis_scenario_store.py`), so any process can
host the Scheduler after a restart (README.md, "Scaling out"). Either way a record that does
not read back is named, never silently dropped: `load_all` leaves it out and keeps its
`DamagedScenarioError`, which `damage` says again while the record is still there
(`scenario_damage.py`).
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Protocol

import anyio
from pydantic import ValidationError

from baton._log import get_logger
from baton._regular_files import read_regular
from baton.errors import validation_problems
from baton.pipeline.artifacts import write_atomic
from baton.pipeline.errors import DamagedScenarioError
from baton.pipeline.scenario import ScenarioRecord

log = get_logger(__name__)

STATE_DIR = Path(".baton") / "scheduler"
# Far above any real record; a bound, so a file swapped for something huge is refused.
MAX_RECORD_BYTES = 64 * 1024 * 1024


class ScenarioStore(Protocol):
    """The Scheduler's records, one per scenario; `damaged` holds, by scenario, the error of
    each record the last `load_all` could not read back."""

    damaged: dict[str, DamagedScenarioError]

    def path(self, scenario: str) -> Path | str:
        """Where the scenario's record lives, as a person would name it in a command."""
        ...

    async def save(self, record: ScenarioRecord) -> None:
        """Replace the scenario's record, whole (never half written)."""
        ...

    async def load_all(self) -> dict[str, ScenarioRecord]:
        """Every scenario record that reads back; the damaged ones are in `damaged`."""
        ...

    async def damage(self, scenario: str) -> DamagedScenarioError | None:
        """The error of the scenario's damaged record, if it is still there (once moved
        aside, the scenario can start afresh)."""
        ...


def record_problem(data: bytes, scenario: str) -> ScenarioRecord | str:
    """The record in `data`, stored under `scenario`'s name, or what is wrong with it (`is
    empty`, `is not JSON (...)`, ...): the same words for a file and a Redis key."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "is not UTF-8 text, so not a scenario record"
    try:
        record = ScenarioRecord.model_validate_json(text)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        if not text.strip():
            return "is empty"
        if error["type"] == "json_invalid":
            return f"is not JSON ({error['msg']})"
        first = validation_problems([error], show_input=False)[0]
        return f"is not a valid scenario record ({first})"
    if record.scenario != scenario:
        return f"holds scenario {record.scenario!r}, not {scenario!r}"
    return record


def record_bytes(record: ScenarioRecord) -> bytes:
    """What a store keeps of `record`: its JSON, indented for a person reading it."""
    return record.model_dump_json(indent=2).encode()


def _read_record_file(path: Path) -> bytes:
    """The bytes of the record file at `path`, never waiting on a named pipe (blocks: run it
    off the event loop); `IsADirectoryError` for a directory, `ValueError` saying why another
    kind of file is refused, `FileNotFoundError`."""
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
    return read_regular(path, str(path), MAX_RECORD_BYTES)


class FileScenarioStore:
    """Scheduler state as `<workspace>/.baton/scheduler/<scenario>.json`.

    A file that cannot be read back (garbage, empty, not a record, not a regular file) does
    not stop the others: `load_all` leaves it out and keeps, under its scenario's name, the
    one-line error that names the file and what to do; `damage` says it again while the file
    is still there (`scenario_damage.py`).
    """

    def __init__(self, workspace: Path) -> None:
        self.root = workspace / STATE_DIR
        self.damaged: dict[str, DamagedScenarioError] = {}

    def path(self, scenario: str) -> Path:
        return self.root / f"{scenario}.json"

    async def save(self, record: ScenarioRecord) -> None:
        await write_atomic(self.path(record.scenario), record_bytes(record), private=True)

    async def load_all(self) -> dict[str, ScenarioRecord]:
        """Every scenario record that reads back; the damaged ones are in `damaged`."""
        records: dict[str, ScenarioRecord] = {}
        self.damaged = {}
        root = anyio.Path(self.root)
        if not await root.exists():
            return records
        async for path in root.glob("*.json"):
            try:
                record = await self._load(Path(path))
            except DamagedScenarioError as error:
                log.error(
                    "scheduler.damaged_state",
                    scenario=path.stem,
                    path=str(path),
                    error=str(error),
                )
                self.damaged[path.stem] = error
                continue
            records[record.scenario] = record
        return records

    async def damage(self, scenario: str) -> DamagedScenarioError | None:
        """The error of the scenario's damaged file, if it is still there (once moved aside,
        the scenario can start afresh)."""
        error = self.damaged.get(scenario)
        if error is not None and not await anyio.Path(self.path(scenario)).exists():
            del self.damaged[scenario]
            return None
        return error

    async def _load(self, path: Path) -> ScenarioRecord:
        fix = (
            f"move it aside (e.g. `mv {path} {path}.damaged`) and submit {path.stem!r} again "
            "to start it afresh, or restore it from a backup and restart `baton run`"
        )

        def damaged(problem: str) -> DamagedScenarioError:
            return DamagedScenarioError(path.stem, path, problem, fix)

        try:
            data = await anyio.to_thread.run_sync(_read_record_file, path)
        except IsADirectoryError:
            raise damaged("is a directory, not a scenario record") from None
        except ValueError as exc:  # a named pipe, a device, a link, too big: never opened
            raise damaged(str(exc).removeprefix(f"{path} ")) from None
        except OSError as exc:
            raise damaged(f"cannot be read ({exc.strerror or exc})") from None
        record = record_problem(data, path.stem)
        if isinstance(record, str):
            raise damaged(record)
        return record
