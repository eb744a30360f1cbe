"""The whole of `baton.toml` for a deployment that runs the pipeline: the kernel's settings
and each agent's `[actors.<name>]` table, validated, with the built-in agents' defaults."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, model_validator

from baton.agents.agent_config import AgentConfig, SandboxConfig
from baton.errors import ConfigError
from baton.models.price_config import PriceOverride, ScenarioLimits, merged_prices
from baton.models.pricing import ModelPrice
from baton.models.telemetry import TelemetryConfig
from baton.pipeline.defaults import DEFAULT_AGENTS
from baton.pipeline.memory_config import MemoryConfig
from baton.runtime.settings import CONFIG_FILE, KernelConfig, describe_errors, read_config
from baton.storage.config import StorageConfig


class BatonConfig(KernelConfig):
    """`baton.toml` with every agent's table checked (unknown keys name themselves)."""

    actors: dict[str, AgentConfig] = Field(default_factory=dict)
    # `[memory]`: long-term memory (README.md, "Long-term memory"; docs/memory.md).
    memory: MemoryConfig = Field(default_factory=MemoryConfig)  # type: ignore[assignment]
    prices: dict[str, PriceOverride] = Field(default_factory=dict)
    scenario: ScenarioLimits = ScenarioLimits()  # type: ignore[assignment]
    # `[sandbox]`: where agents' Write may write besides the scenario's folder.
    sandbox: SandboxConfig = SandboxConfig()  # type: ignore[assignment]
    # `[telemetry]`: OpenTelemetry export (README.md, "Telemetry"; docs/telemetry.md).
    telemetry: TelemetryConfig = TelemetryConfig()  # type: ignore[assignment]
    # `[storage]`: where the workspace's files are kept (docs/storage.md, "The url").
    storage: StorageConfig = StorageConfig()  # type: ignore[assignment]

    @property
    def price_table(self) -> Mapping[str, ModelPrice]:
        """The package's prices with `[prices."<model-id>"]` merged over them."""
        return merged_prices(self.prices)

    @model_validator(mode="before")
    @classmethod
    def _fill_agent_defaults(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        given_actors = data.get("actors") or {}
        if not isinstance(given_actors, Mapping):
            return data  # `actors = 5`: left for validation to name, not a TypeError here
        actors = dict(given_actors)
        for name, defaults in DEFAULT_AGENTS.items():
            given = actors.get(name) or {}
            if isinstance(given, Mapping):
                actors[name] = {**defaults, **given}
        return {**data, "actors": actors}

    @classmethod
    def of(cls, config: KernelConfig) -> BatonConfig:
        """`config` with its agents' tables validated (itself if it already is one)."""
        if isinstance(config, BatonConfig):
            return config
        return parse_config(config.model_dump(), source="the runtime's configuration")

    def agent(self, name: str) -> AgentConfig:
        """The config of agent `name`; `ConfigError` if it has none."""
        try:
            return self.actors[name]
        except KeyError:
            raise ConfigError(
                f"no [actors.{name}] section and no default for it; add one to {CONFIG_FILE}"
            ) from None


def parse_config(data: Mapping[str, Any], *, source: str = CONFIG_FILE) -> BatonConfig:
    """Validate a config mapping; `ConfigError` names each bad or unknown key."""
    try:
        return BatonConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe_errors(exc, source, BatonConfig)) from None


def load_config(
    workspace: Path | None,
    environ: Mapping[str, str] | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
) -> BatonConfig:
    """Read `<workspace>/baton.toml` (optional) and apply `BATON_*` overrides, then
    `overrides` (the command line's, e.g. `{"runtime": {"mailbox": ...}}`)."""
    data, source = read_config(workspace, environ, overrides=overrides)
    return parse_config(data, source=source)
