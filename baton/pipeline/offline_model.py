"""`OfflineModel`: the embedded default when no API key is set.

Each scenario may ship the script the offline model plays for it (`offline_script` in its
`scenario.toml`) or a recording of a real run (`recording.jsonl`, made by `baton run
--record`); a call is routed by its `CallContext.scenario` to that scenario's `ReplayModel`
(a recording comes first) or `ScriptedModel` (docs/recordings.md, "Precedence"). Anything
else gets the fixed offline reply, which says plainly that no model ran. Scripted replies
name the model `offline-scripted`, replayed ones `offline-replay`.
"""

from __future__ import annotations

import os
import posixpath
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn, TypeVar

import anyio

from baton._log import get_logger
from baton.context.payload import Payload
from baton.errors import ConfigError, UsageError
from baton.models._script_file import MAX_SCRIPT_BYTES
from baton.models.errors import RecordingFileError, ScriptExhaustedError, ScriptFileError
from baton.models.protocol import CallContext, Model, ModelLimits, ModelResponse, current_call
from baton.models.recording import (
    MAX_RECORDING_BYTES,
    RECORDING_FILE,
    Recording,
    ReplayedCall,
    ReplayModel,
    recording_path,
)
from baton.models.scripted import (
    OFFLINE_MODEL_NAME,
    Policy,
    Script,
    ScriptedCall,
    ScriptedModel,
    default_policy,
)
from baton.pipeline.scenario import (
    SCENARIO_FILE,
    load_scenario,
    scenario_dir,
    scenario_from_bytes,
)
from baton.pipeline.scenario_inputs import scenario_key
from baton.pipeline.scenario_names import check_scenario_name
from baton.runtime.settings import MAX_CONFIG_BYTES
from baton.storage.bounded import read_bounded
from baton.storage.local import remote_store
from baton.storage.protocol import Storage

log = get_logger(__name__)

KEEP_CALLS = 10_000

T = TypeVar("T")


async def _off_loop(parse: Callable[[bytes, str], T], data: bytes, shown: str) -> T:
    """`parse(data, shown)` on a worker thread: a long script or recording parses for a
    while, and the loop serves every other actor meanwhile."""
    return await anyio.to_thread.run_sync(parse, data, shown)


def _script_of(data: bytes, shown: str) -> Script:
    return Script.from_bytes(data, shown=shown)


def shown_path(path: Path, workspace: Path) -> str:
    """`path` as messages show it: relative to the workspace when it lies inside."""
    return str(path.relative_to(workspace)) if path.is_relative_to(workspace) else str(path)


def ran_out(shown: str, script: Script) -> Policy:
    """The policy of a scenario's offline script: a turn past the end of its actor's turns
    stops the round with `ScriptExhaustedError` naming the file, the actor and the turn,
    rather than a reply blaming a missing API key (docs/scenarios.md, "When the script runs
    out")."""

    def policy(payload: Payload, context: CallContext) -> NoReturn:
        del payload  # only which turn of whom was asked matters
        actor = script.for_actor(context.actor)
        length = len(actor.turns) if actor is not None else 0
        raise ScriptExhaustedError(
            context.actor, context.turn, length, script=shown, scenario=context.scenario
        )

    return policy


class OfflineModel:
    """Routes each call to the script of the scenario it is for."""

    # Replies are computed here, without latency: an agent waits for a summary it asked for
    # in the background at the threshold instead of going on past it, so offline runs
    # compact at the same steps every time (docs/context.md, "Background compaction").
    answers_at_once = True

    def __init__(
        self, workspace: Path, *, context_window: int = 1_000_000, storage: Storage | None = None
    ) -> None:
        self._workspace = workspace
        # A remote store: the scenario's recording, scenario.toml and script are read from it,
        # as its submit stored them (docs/storage.md, "Scenario inputs"), not from this disk.
        self._storage = remote_store(storage)
        self._context_window = context_window
        self._default = self._scripted(None)
        self._by_scenario: dict[str, ScriptedModel | ReplayModel] = {}

    @property
    def name(self) -> str:
        return OFFLINE_MODEL_NAME

    def _scripted(self, script: Path | None) -> ScriptedModel:
        if script is None:
            window, keep = self._context_window, KEEP_CALLS
            return ScriptedModel(policy=default_policy, context_window=window, keep_calls=keep)
        shown = shown_path(script, self._workspace)
        return self._playing(Script.from_file(script, shown=shown), shown)

    def _playing(self, script: Script, shown: str) -> ScriptedModel:
        window, keep = self._context_window, KEEP_CALLS
        policy = ran_out(shown, script)
        return ScriptedModel(script, policy=policy, context_window=window, keep_calls=keep)

    def _replaying(self, recording: Recording, shown: str) -> ReplayModel:
        window = self._context_window
        return ReplayModel(recording, context_window=window, keep_calls=KEEP_CALLS, shown_as=shown)

    def source_for(self, scenario: str) -> Path | None:
        """What answers `scenario` offline: its recording if it has one, else its offline
        script, else None (only the fixed offline reply). Blocks: reads the scenario."""
        recording = recording_path(self._workspace, scenario)
        # Whatever is at the recording's path is the recording: a directory or a pipe there
        # is refused when loaded, naming it, rather than passed over unsaid.
        if os.path.lexists(recording):
            return recording
        try:
            config = load_scenario(self._workspace, scenario)
        except UsageError:
            return None
        if config.offline_script is None:
            return None
        return scenario_dir(self._workspace, scenario) / config.offline_script

    def _load(self, scenario: str) -> ScriptedModel | ReplayModel:
        source = self.source_for(scenario)
        # What `baton run --submit`'s banner says, for scenarios submitted later too.
        log.info("model.offline_source", scenario=scenario, source=source and str(source))
        if source is None:
            return self._default
        if source == recording_path(self._workspace, scenario):
            shown = shown_path(source, self._workspace)
            return self._replaying(Recording.load(source, shown), shown)
        return self._scripted(source)

    async def _load_stored(self, storage: Storage, scenario: str) -> ScriptedModel | ReplayModel:
        """As `_load`, from the objects the scenario's submit stored, each named by its key
        in errors as a file is named by its path."""
        key = scenario_key(check_scenario_name(scenario), RECORDING_FILE)
        try:
            data = await read_bounded(storage, key, MAX_RECORDING_BYTES)
        except ValueError as exc:
            raise RecordingFileError(key, None, str(exc)) from None
        if data is not None:
            log.info("model.offline_source", scenario=scenario, source=key)
            return self._replaying(await _off_loop(Recording.from_bytes, data, key), key)
        script = await self._stored_script(storage, scenario)
        log.info("model.offline_source", scenario=scenario, source=script)
        if script is None:
            return self._default
        try:
            data = await read_bounded(storage, script, MAX_SCRIPT_BYTES)
        except ValueError as exc:
            raise ScriptFileError(script, str(exc)) from None
        if data is None:
            raise ScriptFileError(script, "there is no such object in the store")
        return self._playing(await _off_loop(_script_of, data, script), script)

    async def _stored_script(self, storage: Storage, scenario: str) -> str | None:
        """The key of the script the stored `scenario.toml` names, or None (no such file,
        or no `offline_script` in it)."""
        key = scenario_key(scenario, SCENARIO_FILE)
        try:
            data = await read_bounded(storage, key, MAX_CONFIG_BYTES)
        except ValueError as exc:
            raise ConfigError(f"{key} {exc}") from None
        if data is None:
            return None
        config = scenario_from_bytes(data, scenario, key)
        if config.offline_script is None:
            return None
        # Relative to the scenario's folder, as on disk; a key that leaves the store's root
        # is refused by the store, naming it.
        return posixpath.normpath(scenario_key(scenario, config.offline_script))

    async def _model_for(self, scenario: str | None) -> Model:
        if scenario is None:
            return self._default
        model = self._by_scenario.get(scenario)
        if model is None:
            if self._storage is not None:
                model = await self._load_stored(self._storage, scenario)
            else:
                model = await anyio.to_thread.run_sync(self._load, scenario)
            self._by_scenario[scenario] = model
        return model

    async def create(self, payload: Payload) -> ModelResponse:
        call = current_call()
        model = await self._model_for(call.scenario if call is not None else None)
        return await model.create(payload)

    async def limits(self) -> ModelLimits:
        return await self._default.limits()

    async def count_tokens(self, payload: Payload) -> int:
        return await self._default.count_tokens(payload)

    @property
    def calls(self) -> list[ScriptedCall | ReplayedCall]:
        """Every call answered so far (the newest `KEEP_CALLS` per script or recording)."""
        models = [self._default, *{id(m): m for m in self._by_scenario.values()}.values()]
        merged: deque[ScriptedCall | ReplayedCall] = deque()
        for model in models:
            merged.extend(model.calls)
        return list(merged)
