"""`OfflineModel`: the embedded default when no API key is set.

Each scenario may ship the script the offline model plays for it (`offline_script` in its
`scenario.toml`); a call is routed by its `CallContext.scenario` to that scenario's
`ScriptedModel`. Anything unscripted gets the fixed offline reply, which says plainly that
no model ran. Every reply names the model `offline-scripted`.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

import anyio

from baton.actors.model import ModelLimits, ModelResponse, current_call
from baton.actors.scenario import load_scenario, scenario_dir
from baton.actors.scripted_model import (
    OFFLINE_MODEL_NAME,
    ScriptedCall,
    ScriptedModel,
    default_policy,
)
from baton.context.payload import Payload
from baton.errors import UsageError

KEEP_CALLS = 10_000


class OfflineModel:
    """Routes each call to the script of the scenario it is for."""

    def __init__(self, workspace: Path, *, context_window: int = 1_000_000) -> None:
        self._workspace = workspace
        self._context_window = context_window
        self._default = self._scripted(None)
        self._by_scenario: dict[str, ScriptedModel] = {}

    @property
    def name(self) -> str:
        return OFFLINE_MODEL_NAME

    def _scripted(self, script: Path | None) -> ScriptedModel:
        options = {
            "policy": default_policy,
            "context_window": self._context_window,
            "keep_calls": KEEP_CALLS,
        }
        if script is None:
            return ScriptedModel(**options)  # type: ignore[arg-type]
        return ScriptedModel.from_file(script, **options)

    def _load(self, scenario: str) -> ScriptedModel:
        try:
            config = load_scenario(self._workspace, scenario)
        except UsageError:
            return self._default
        if config.offline_script is None:
            return self._default
        return self._scripted(scenario_dir(self._workspace, scenario) / config.offline_script)

    async def _model_for(self, scenario: str | None) -> ScriptedModel:
        if scenario is None:
            return self._default
        model = self._by_scenario.get(scenario)
        if model is None:
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
    def calls(self) -> list[ScriptedCall]:
        """Every call answered so far (the newest `KEEP_CALLS` per script)."""
        models = [self._default, *{id(m): m for m in self._by_scenario.values()}.values()]
        merged: deque[ScriptedCall] = deque()
        for model in models:
            merged.extend(model.calls)
        return list(merged)
