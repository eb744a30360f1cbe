"""OpenTelemetry export of agent rounds, model calls and tool calls (docs/telemetry.md).

Off unless `[telemetry] otlp_endpoint` or `OTEL_EXPORTER_OTLP_ENDPOINT` names a collector;
then it needs the `otel` extra (`pip install 'baton[otel]'`), imported only here and only then.
`baton run` opens it around the runtime (`open_telemetry`); the agent loop asks
`round_trace()` for each round's trace, a no-op while nothing is exported, and passes that
object down the round explicitly (on the conversation's state) so rounds running at once
never share one.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

import anyio
from pydantic import BaseModel, ConfigDict, Field, field_validator

from baton._log import get_logger
from baton.context.events import ContextCompactedEvent
from baton.context.payload import ToolUseBlock
from baton.errors import ConfigError
from baton.models.protocol import ModelResponse
from baton.runtime.settings import redact_url

if TYPE_CHECKING:
    from baton.models._otel import OtelTelemetry

log = get_logger(__name__)

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
INSTALL = "pip install 'baton[otel]'"


class TelemetryConfig(BaseModel):
    """`[telemetry]` in baton.toml: where spans and metrics go (README.md, "Telemetry")."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    otlp_endpoint: str | None = Field(
        None,
        description="OTLP/HTTP collector base URL, e.g. http://127.0.0.1:4318 (None: off "
        "unless OTEL_EXPORTER_OTLP_ENDPOINT is set)",
    )
    service_name: str | None = Field(
        None,
        min_length=1,
        description="the `service.name` resource (default OTEL_SERVICE_NAME or baton)",
    )

    @field_validator("otlp_endpoint")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return value
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"otlp_endpoint {value!r} is not an http(s) URL: write the collector's OTLP/HTTP "
                "base URL, e.g. http://127.0.0.1:4318"
            )
        return value


class ChatTrace(Protocol):
    """A model call's span, told the reply."""

    def record(self, response: ModelResponse) -> None:
        """Put the reply's model, usage and finish reason on the span."""
        ...


class RoundTrace(Protocol):
    """One agent round's span and what happens under it."""

    def chat(
        self, request_model: str, *, purpose: str, turn: int
    ) -> AbstractContextManager[ChatTrace]:
        """The span of one model call, for the block."""
        ...

    def tool(self, use: ToolUseBlock) -> AbstractContextManager[Callable[[bool], None]]:
        """The span of one tool call; what it yields is told whether the call failed."""
        ...

    def compacted(self, event: ContextCompactedEvent) -> None:
        """A compaction, as an event on the round's span."""
        ...

    def handed_off(self, fields: Mapping[str, Any]) -> None:
        """A handoff (the `handoff.sent` fields), as an event on the round's span."""
        ...

    def fail(self, error: BaseException) -> None:
        """Mark the round's span failed (not for cancellation: a stop is not a failure)."""
        ...

    def end(self) -> None:
        """End the round's span."""
        ...


class _NoChat:
    def record(self, response: ModelResponse) -> None:
        pass


def _no_outcome(is_error: bool) -> None:
    pass


class _NoTrace:
    """The trace of every round while nothing is exported: does nothing, costs nothing."""

    def chat(
        self, request_model: str, *, purpose: str, turn: int
    ) -> AbstractContextManager[ChatTrace]:
        return nullcontext(_NO_CHAT)

    def tool(self, use: ToolUseBlock) -> AbstractContextManager[Callable[[bool], None]]:
        return nullcontext(_no_outcome)

    def compacted(self, event: ContextCompactedEvent) -> None:
        pass

    def handed_off(self, fields: Mapping[str, Any]) -> None:
        pass

    def fail(self, error: BaseException) -> None:
        pass

    def end(self) -> None:
        pass


_NO_CHAT = _NoChat()
NO_TRACE: RoundTrace = _NoTrace()

_exported: list[OtelTelemetry] = []


@contextmanager
def exporting(telemetry: OtelTelemetry) -> Iterator[OtelTelemetry]:
    """Trace every agent round of the process to `telemetry` for the block (tests give one
    built on in-memory exporters; `open_telemetry` one that sends OTLP)."""
    _exported.append(telemetry)
    try:
        yield telemetry
    finally:
        _exported.remove(telemetry)


def round_trace(agent: str, conversation: str, scenario: str | None) -> RoundTrace:
    """Start the trace of one agent round (`NO_TRACE` while nothing is exported)."""
    if not _exported:
        return NO_TRACE
    return _exported[-1].round(agent, conversation, scenario)


def telemetry_endpoint(
    config: TelemetryConfig, environ: Mapping[str, str]
) -> tuple[str | None, str] | None:
    """The configured endpoint (None: the OTLP variables') and what named it; None when off."""
    if config.otlp_endpoint is not None:
        return config.otlp_endpoint, "[telemetry] otlp_endpoint"
    for variable in ENDPOINT_VARIABLES:
        if environ.get(variable):
            return None, variable
    return None


def _otel_module() -> Any:
    return importlib.import_module("baton.models._otel")


def load_telemetry(
    config: TelemetryConfig, environ: Mapping[str, str] | None = None
) -> OtelTelemetry | None:
    """The OTLP exporters `config` and the environment ask for, or None when telemetry is off;
    a `ConfigError` naming the extra when it is asked for and not installed."""
    environ = os.environ if environ is None else environ
    found = telemetry_endpoint(config, environ)
    if found is None:
        return None
    endpoint, source = found
    try:
        otel = _otel_module()
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("opentelemetry"):
            raise
        raise ConfigError(
            f"{source} needs OpenTelemetry, which is not installed: {INSTALL}"
        ) from None
    service = config.service_name or environ.get("OTEL_SERVICE_NAME") or "baton"
    telemetry: OtelTelemetry = otel.otlp_telemetry(endpoint, service)
    return telemetry


@asynccontextmanager
async def open_telemetry(
    config: TelemetryConfig, environ: Mapping[str, str] | None = None
) -> AsyncIterator[OtelTelemetry | None]:
    """Export for the block what `config` asks for (nothing when off); on exit, flush what is
    buffered, in a thread, so the spans of the last rounds reach the collector."""
    telemetry = await anyio.to_thread.run_sync(load_telemetry, config, environ)
    if telemetry is None:
        yield None
        return
    endpoint = config.otlp_endpoint
    log.info("telemetry.exporting", endpoint=redact_url(endpoint) if endpoint else "OTEL_*")
    try:
        with exporting(telemetry):
            yield telemetry
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(telemetry.shutdown)
