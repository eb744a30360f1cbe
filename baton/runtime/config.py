"""`baton.toml`: the workspace configuration, validated, with `BATON_*` environment overrides.

Unknown keys are errors that name the key (a typo must not silently fall back to a default).
An environment variable `BATON_<SECTION>__<KEY>` overrides one value, e.g.
`BATON_ACTORS__EXECUTE__MODEL=claude-sonnet-4-5` or `BATON_RUNTIME__MAILBOX=memory`.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from baton.actors.agent_config import AgentConfig
from baton.errors import ConfigError

CONFIG_FILE = "baton.toml"
ENV_PREFIX = "BATON_"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SupervisionConfig(_Strict):
    max_attempts: int = Field(3, ge=1)
    max_restarts: int = Field(5, ge=0)
    restart_window: float = Field(60.0, gt=0)
    backoff_initial: float = Field(0.05, ge=0)
    backoff_max: float = Field(5.0, ge=0)


class RuntimeConfig(_Strict):
    # sqlite needs a workspace to live in: a runtime opened without one uses memory.
    mailbox: Literal["memory", "sqlite"] = Field(
        "sqlite", description="mailbox backend: memory (not durable) or sqlite (durable)"
    )
    mailbox_capacity: int = Field(1024, ge=1)
    shutdown_timeout: float = Field(10.0, ge=0)
    supervision: SupervisionConfig = SupervisionConfig()


class LogsConfig(_Strict):
    token_log_max_bytes: int = Field(50 * 1024 * 1024, ge=4096)
    token_log_backups: int = Field(5, ge=1)


DEFAULT_AGENTS: dict[str, dict[str, Any]] = {
    "init": {
        "model": "claude-opus-4-5",
        "context_window": 200_000,
        "compact_threshold": 150_000,
        "keep_recent_steps": 3,
    },
    "execute": {
        "model": "claude-sonnet-4-5",
        "context_window": 1_000_000,
        "compact_threshold": 700_000,
        "keep_recent_steps": 5,
    },
    "scheduler": {
        "model": "claude-haiku-4-5",
        "context_window": 200_000,
        "compact_threshold": 150_000,
        "keep_recent_steps": 3,
    },
}


class BatonConfig(_Strict):
    """The whole of `baton.toml`."""

    runtime: RuntimeConfig = RuntimeConfig()
    logs: LogsConfig = LogsConfig()
    actors: dict[str, AgentConfig] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _fill_agent_defaults(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        actors = dict(data.get("actors") or {})
        for name, defaults in DEFAULT_AGENTS.items():
            given = actors.get(name) or {}
            if isinstance(given, Mapping):
                actors[name] = {**defaults, **given}
        return {**data, "actors": actors}

    def agent(self, name: str) -> AgentConfig:
        """The config of agent `name`; `ConfigError` if it has none."""
        try:
            return self.actors[name]
        except KeyError:
            raise ConfigError(
                f"no [actors.{name}] section and no default for it; add one to {CONFIG_FILE}"
            ) from None


def _env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    for key, raw in environ.items():
        if not key.startswith(ENV_PREFIX):
            continue
        path = [part.lower() for part in key[len(ENV_PREFIX) :].split("__")]
        if len(path) < 2:
            continue  # BATON_WORKSPACE and the like are not config keys
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        node = overrides
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return overrides


def _merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(dict(merged[key]), value)
        else:
            merged[key] = value
    return merged


def _describe(error: ValidationError, source: str) -> str:
    problems = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"])
        if item["type"] == "extra_forbidden":
            problems.append(f"unknown key {where!r}")
        else:
            problems.append(f"{where}: {item['msg']}")
    return f"invalid configuration in {source}: " + "; ".join(problems)


def parse_config(data: Mapping[str, Any], *, source: str = CONFIG_FILE) -> BatonConfig:
    """Validate a config mapping; `ConfigError` names each bad or unknown key."""
    try:
        return BatonConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, source)) from None


def load_config(workspace: Path | None, environ: Mapping[str, str] | None = None) -> BatonConfig:
    """Read `<workspace>/baton.toml` (optional) and apply `BATON_*` overrides."""
    data: dict[str, Any] = {}
    source = "defaults"
    if workspace is not None:
        path = workspace / CONFIG_FILE
        if path.is_file():
            source = str(path)
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    overrides = _env_overrides(os.environ if environ is None else environ)
    if overrides:
        source = f"{source} + BATON_* environment"
    return parse_config(_merge(data, overrides), source=source)
