"""`baton.toml`: the workspace configuration, validated, with `BATON_*` environment overrides.

Unknown keys are errors that name the key (a typo must not silently fall back to a default).
An environment variable `BATON_<SECTION>__<KEY>` overrides one value, e.g.
`BATON_ACTORS__EXECUTE__MODEL=claude-opus-5-5` or `BATON_RUNTIME__MAILBOX=memory`.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from baton.actors.agent_config import AgentConfig
from baton.context.model_rules import CURRENT_MODELS
from baton.context.strategy import DEFAULT_BUDGETS
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


REDIS_SCHEMES = ("redis", "rediss")


def is_redis_url(mailbox: str) -> bool:
    """Whether a `runtime.mailbox` value names a Redis server (the distributed backend)."""
    return urlsplit(mailbox).scheme in REDIS_SCHEMES


def check_mailbox(value: str) -> str:
    """`memory`, `sqlite` or `redis://HOST:PORT/DB`; ValueError saying what is wrong."""
    if value in ("memory", "sqlite"):
        return value
    parts = urlsplit(value)
    if parts.scheme not in REDIS_SCHEMES:
        raise ValueError(f"mailbox {value!r} is not one of memory, sqlite, redis://HOST:PORT/DB")
    try:
        port = parts.port
    except ValueError:
        port = -1
    database = parts.path.lstrip("/")
    if not parts.hostname or port == -1 or (database and not database.isdigit()):
        raise ValueError(
            f"mailbox {value!r} is not a Redis URL: write redis://HOST:PORT/DB, "
            "e.g. redis://127.0.0.1:6379/0"
        )
    return value


class RedisConfig(_Strict):
    """How processes share a Redis deployment (used when `mailbox` is a redis:// URL)."""

    # Messages a worker has taken but not settled are taken over by another worker once they
    # have gone unrenewed this long; a live worker renews them every third of it.
    claim_idle: float = Field(30.0, gt=0)
    # A worker owns a conversation while it works on it; a dead worker's lease lapses after it.
    lease_ttl: float = Field(15.0, gt=0)
    prefix: str = Field("baton", pattern=r"^[A-Za-z0-9_.:-]{1,64}$")


class RuntimeConfig(_Strict):
    # sqlite needs a workspace to live in: a runtime opened without one uses memory.
    mailbox: str = Field(
        "sqlite",
        description="mailbox backend: memory (not durable), sqlite (durable, one process) "
        "or redis://HOST:PORT/DB (durable, shared by processes)",
    )
    mailbox_capacity: int = Field(1024, ge=1)
    shutdown_timeout: float = Field(10.0, ge=0)
    supervision: SupervisionConfig = SupervisionConfig()
    redis: RedisConfig = RedisConfig()

    @field_validator("mailbox")
    @classmethod
    def _known_mailbox(cls, value: str) -> str:
        return check_mailbox(value)


class LogsConfig(_Strict):
    token_log_max_bytes: int = Field(50 * 1024 * 1024, ge=4096)
    token_log_backups: int = Field(5, ge=1)


DEFAULT_AGENTS: dict[str, dict[str, Any]] = {
    # Opus always thinks; Execute thinks when it judges a step worth it; the Scheduler's
    # one-line task summaries need none (docs/models.md).
    "init": {"model": CURRENT_MODELS["opus"], "thinking": "adaptive", **DEFAULT_BUDGETS["init"]},
    "execute": {
        "model": CURRENT_MODELS["sonnet"],
        "thinking": "adaptive",
        **DEFAULT_BUDGETS["execute"],
    },
    "scheduler": {
        "model": CURRENT_MODELS["haiku"],
        "thinking": "off",
        **DEFAULT_BUDGETS["scheduler"],
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


def load_config(
    workspace: Path | None,
    environ: Mapping[str, str] | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
) -> BatonConfig:
    """Read `<workspace>/baton.toml` (optional) and apply `BATON_*` overrides, then
    `overrides` (the command line's, e.g. `{"runtime": {"mailbox": ...}}`)."""
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
    from_env = _env_overrides(os.environ if environ is None else environ)
    if from_env:
        source = f"{source} + BATON_* environment"
        data = _merge(data, from_env)
    if overrides:
        source = f"{source} + command line"
        data = _merge(data, overrides)
    return parse_config(data, source=source)


def redact_url(url: str) -> str:
    """`url` with any password replaced, for banners and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()
