"""`baton.toml` as the kernel reads it: `[runtime]`, `[logs]` and `[server]`, with `BATON_*`
overrides.

Unknown keys are errors that name the key (a typo must not silently fall back to a default).
An environment variable `BATON_<SECTION>__<KEY>` overrides one value, e.g.
`BATON_RUNTIME__MAILBOX=memory` or `BATON_ACTORS__EXECUTE__MODEL=claude-opus-5-5`. The
`[actors.*]` tables belong to whoever runs agents (`baton.pipeline.config` validates them); the
kernel carries them as they are.
"""

from __future__ import annotations

import json
import os
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from baton.errors import ConfigError, validation_problems

CONFIG_FILE = "baton.toml"
ENV_PREFIX = "BATON_"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SupervisionConfig(_Strict):
    max_attempts: int = Field(3, ge=1)
    max_restarts: int = Field(5, ge=0)
    restart_window: float = Field(60.0, gt=0)
    # Seconds an actor that spent its restart budget waits before it restarts; 0: it stays
    # stopped (`failed`) until the process restarts.
    cooldown: float = Field(60.0, ge=0)
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
    # Token-log lines the shared stream keeps, about (every process's; docs/token-log.md,
    # "Across processes"): Redis trims the oldest past it.
    token_log_max: int = Field(100_000, ge=1)
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
    # Dead letters kept (each with a 4 KB excerpt of its body), newest first, and for how
    # many days; older or more are pruned (README.md, "Durable mailboxes and crashes").
    dead_letter_max: int = Field(10_000, ge=1)
    dead_letter_days: float = Field(30.0, gt=0)
    supervision: SupervisionConfig = SupervisionConfig()
    redis: RedisConfig = RedisConfig()

    @field_validator("mailbox")
    @classmethod
    def _known_mailbox(cls, value: str) -> str:
        return check_mailbox(value)


class LogsConfig(_Strict):
    token_log_max_bytes: int = Field(50 * 1024 * 1024, ge=4096)
    token_log_backups: int = Field(5, ge=1)


class ServerConfig(_Strict):
    """The control API of `baton run` (docs/architecture.md, "server/"): what one request may
    cost it. A bigger body is answered 413, a slower request 408."""

    max_body_bytes: int = Field(8 * 1024 * 1024, ge=1024)
    # Seconds a client has to send a request's headers, and then as much again for its body.
    request_timeout: float = Field(10.0, gt=0)


class KernelConfig(_Strict):
    """The whole of `baton.toml` as the kernel sees it: agents' tables are passed on as given."""

    runtime: RuntimeConfig = RuntimeConfig()
    logs: LogsConfig = LogsConfig()
    server: ServerConfig = ServerConfig()
    # `[sandbox]`: carried as given (the pipeline's `BatonConfig` checks it).
    sandbox: dict[str, Any] = Field(
        default_factory=dict, description="[sandbox]: where agents may write (write_paths)"
    )
    actors: dict[str, Any] = Field(
        default_factory=dict, description="[actors.<name>] tables, for the layer that runs agents"
    )
    # Carried as given for the layer that runs agents too (baton.models.price_config checks them).
    prices: dict[str, Any] = Field(
        default_factory=dict, description='[prices."<model-id>"] tables: USD per million tokens'
    )
    scenario: dict[str, Any] = Field(
        default_factory=dict, description="[scenario]: defaults of every scenario (max_cost_usd)"
    )
    # `[telemetry]`: carried as given too (baton.models.telemetry checks it).
    telemetry: dict[str, Any] = Field(
        default_factory=dict, description="[telemetry]: OpenTelemetry export (otlp_endpoint)"
    )
    # `[memory]`: carried as given too (baton.pipeline.memory_config checks it).
    memory: dict[str, Any] = Field(
        default_factory=dict, description="[memory]: long-term memory (backend, budget)"
    )
    # `[storage]`: carried as given too (baton.storage.config checks it).
    storage: dict[str, Any] = Field(
        default_factory=dict, description="[storage]: where the workspace's files are kept (url)"
    )


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


def describe_errors(
    error: ValidationError, source: str, schema: type[BaseModel] | None = None
) -> str:
    """One line naming each bad or unknown key of a config that did not validate (with the
    `schema` it was validated against, the key an unknown one probably meant)."""
    problems = validation_problems(error, show_input=False, unknown_keys=True, schema=schema)
    return f"invalid configuration in {source}: " + "; ".join(problems)


MAX_CONFIG_BYTES = 16 * 1024 * 1024
"""A TOML file larger than this is refused before it is read (a baton.toml is a few KB)."""

_KINDS = {
    stat.S_IFIFO: "named pipe",
    stat.S_IFSOCK: "socket",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
}


def _not_regular(path: Path, info: os.stat_result, what: str) -> ConfigError | None:
    if stat.S_ISDIR(info.st_mode):
        return ConfigError(f"{path} is a directory, not {what} — move it aside")
    if not stat.S_ISREG(info.st_mode):
        kind = _KINDS.get(stat.S_IFMT(info.st_mode), "special file")
        return ConfigError(f"{path} is a {kind}, not {what} — move it aside")
    return None


def _read_regular_text(path: Path, what: str) -> str | None:
    """The text of the regular file at `path`, or None when nothing is there (a dangling
    link included); `ConfigError` for anything else at the path, named as `what`."""
    # Not baton._regular_files (the kernel does not import the agents' layer,
    # docs/architecture.md): judged by its `stat` first, then opened with O_NONBLOCK, so a
    # named pipe put there since opens at once (and is refused by `fstat`) instead of
    # waiting for a writer that never comes, hanging the start with the workspace held.
    try:
        refused = _not_regular(path, os.stat(path), what)
        if refused is not None:
            raise refused
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    with open(fd, "rb", closefd=True) as handle:
        refused = _not_regular(path, os.fstat(fd), what)
        if refused is not None:
            raise refused
        data = handle.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path} is over {MAX_CONFIG_BYTES} bytes, too large for {what}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
            f"{exc.start}) — save it as UTF-8"
        ) from None


def _parse_toml(path: Path, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc} — fix the file") from None
    except RecursionError:
        # The parser recurses once per nesting level: a file nested hundreds deep is the
        # file's error, not a crash to restart on.
        raise ConfigError(f"{path} nests arrays or tables too deep — flatten them") from None


def read_toml(path: Path) -> dict[str, Any]:
    """The TOML file at `path`; a one-line `ConfigError` naming it when it cannot be read or
    is not a regular file (a directory, a named pipe)."""
    text = _read_regular_text(path, "a TOML file")
    if text is None:
        raise ConfigError(f"cannot read {path}: No such file or directory")
    return _parse_toml(path, text)


def read_config(
    workspace: Path | None,
    environ: Mapping[str, str] | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], str]:
    """`<workspace>/baton.toml` (optional) with `BATON_*` overrides, then `overrides` (the
    command line's, e.g. `{"runtime": {"mailbox": ...}}`) merged in, and where it came from.
    Anything at the path but a regular file is a `ConfigError`, not a file passed over."""
    data: dict[str, Any] = {}
    source = "defaults"
    if workspace is not None:
        path = workspace / CONFIG_FILE
        text = _read_regular_text(path, "a config file")
        if text is not None:
            source = str(path)
            data = _parse_toml(path, text)
    from_env = _env_overrides(os.environ if environ is None else environ)
    if from_env:
        source = f"{source} + BATON_* environment"
        data = _merge(data, from_env)
    if overrides:
        source = f"{source} + command line"
        data = _merge(data, overrides)
    return data, source


def load_settings(
    workspace: Path | None,
    environ: Mapping[str, str] | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
) -> KernelConfig:
    """The kernel's view of the workspace's configuration; `ConfigError` names each bad key."""
    data, source = read_config(workspace, environ, overrides=overrides)
    try:
        return KernelConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe_errors(exc, source, KernelConfig)) from None


def redact_url(url: str) -> str:
    """`url` with any password replaced, for banners and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()
