"""The OpenTelemetry side of `baton.models.telemetry`: GenAI spans and the token-usage metric
(docs/telemetry.md, "Spans" and "Metrics").

Only imported when telemetry is on: it needs the `otel` extra. Every span is started with an
explicit parent context (the round's), never the ambient one, so rounds running at once in
one process keep their own chat and tool spans. Nothing a model or tool reads or writes
(messages, thinking, tool inputs and results) is put on a span.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import anyio
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.metrics import Histogram, MeterProvider
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider

from baton.context.events import ContextCompactedEvent
from baton.context.payload import ToolUseBlock
from baton.models.protocol import ModelResponse

PROVIDER = "anthropic"
SCOPE = "baton"
# The GenAI semantic conventions' advised buckets for `gen_ai.client.token.usage`.
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48)


def input_tokens(response: ModelResponse) -> int:
    """All input tokens of a call: uncached, read from and written to the cache, summed (the
    GenAI conventions' rule for Anthropic, whose API reports the three apart)."""
    usage = response.usage
    return usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens


class OtelChat:
    """One `chat {model}` span, told the reply once it arrives."""

    def __init__(self, span: Span, telemetry: OtelTelemetry, request_model: str) -> None:
        self._span = span
        self._telemetry = telemetry
        self._request_model = request_model

    def record(self, response: ModelResponse) -> None:
        """Put the reply's model, usage and finish reason on the span, and count its tokens."""
        usage = response.usage
        total_input = input_tokens(response)
        self._span.set_attributes(
            {
                "gen_ai.response.model": response.model,
                "gen_ai.usage.input_tokens": total_input,
                "gen_ai.usage.output_tokens": usage.output_tokens,
                "gen_ai.usage.cache_read.input_tokens": usage.cache_read_input_tokens,
                "gen_ai.usage.cache_creation.input_tokens": usage.cache_creation_input_tokens,
                "gen_ai.response.finish_reasons": [response.stop_reason or "unknown"],
            }
        )
        metric = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": PROVIDER,
            "gen_ai.request.model": self._request_model,
            "gen_ai.response.model": response.model,
        }
        tokens = self._telemetry.token_usage
        tokens.record(total_input, {**metric, "gen_ai.token.type": "input"})
        tokens.record(usage.output_tokens, {**metric, "gen_ai.token.type": "output"})
        self._telemetry.duration.record(response.latency_ms / 1000, metric)


class OtelRound:
    """One agent round's `invoke_agent {agent}` span and the context its children start in."""

    def __init__(
        self, telemetry: OtelTelemetry, agent: str, conversation: str, scenario: str | None
    ) -> None:
        self._tracer = telemetry.tracer
        self._telemetry = telemetry
        self._conversation = conversation
        self._common: dict[str, Any] = {"gen_ai.conversation.id": conversation}
        if scenario is not None:
            self._common["baton.scenario"] = scenario
        self._span = self._tracer.start_span(
            f"invoke_agent {agent}",
            context=otel_context.Context(),  # a root: never the ambient context
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.provider.name": PROVIDER,
                "gen_ai.agent.name": agent,
                **self._common,
            },
        )
        self._context = trace.set_span_in_context(self._span, otel_context.Context())

    @contextmanager
    def chat(self, request_model: str, *, purpose: str, turn: int) -> Iterator[OtelChat]:
        """A `chat {model}` span under the round's, ended with an error status on failure."""
        span = self._tracer.start_span(
            f"chat {request_model}",
            context=self._context,
            kind=SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": PROVIDER,
                "gen_ai.request.model": request_model,
                "baton.purpose": purpose,
                "baton.turn": turn,
                **self._common,
            },
        )
        with _ending(span):
            yield OtelChat(span, self._telemetry, request_model)

    @contextmanager
    def tool(self, use: ToolUseBlock) -> Iterator[Callable[[bool], None]]:
        """An `execute_tool {tool}` span under the round's; what it yields is told whether the
        call ended in error (a tool's failure is a result, not an exception)."""
        span = self._tracer.start_span(
            f"execute_tool {use['name']}",
            context=self._context,
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": use["name"],
                "gen_ai.tool.call.id": use["id"],
                "gen_ai.tool.type": "function",
                **self._common,
            },
        )

        def outcome(is_error: bool) -> None:
            if is_error:
                span.set_attribute("error.type", "tool_error")
                span.set_status(Status(StatusCode.ERROR))

        with _ending(span):
            yield outcome

    def compacted(self, event: ContextCompactedEvent) -> None:
        """The compaction's figures, as the token log's `context.compacted` has them."""
        self._span.add_event(event.event, _event_attributes(event.log_fields()))

    def handed_off(self, fields: Mapping[str, Any]) -> None:
        """The handoff's figures, as the token log's `handoff.sent` has them."""
        self._span.add_event("handoff.sent", _event_attributes(fields))

    def fail(self, error: BaseException) -> None:
        """Mark the round's span failed (not for cancellation: a stop is not a failure)."""
        _failed(self._span, error)

    def end(self) -> None:
        """End the round's span."""
        self._span.end()


def _event_attributes(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if isinstance(v, str | bool | int | float)}


@contextmanager
def _ending(span: Span) -> Iterator[None]:
    try:
        yield
    except BaseException as error:
        _failed(span, error)
        raise
    finally:
        span.end()


def _failed(span: Span, error: BaseException) -> None:
    if isinstance(error, anyio.get_cancelled_exc_class()):
        return  # stopped from outside (a shutdown, a timeout): not the call's failure
    # The type only: an exception's text may quote what the model or a tool was given.
    span.set_attribute("error.type", type(error).__qualname__)
    span.set_status(Status(StatusCode.ERROR))


class OtelTelemetry:
    """Rounds traced on a tracer provider, token usage counted on a meter provider."""

    def __init__(
        self,
        tracer_provider: TracerProvider,
        meter_provider: MeterProvider,
        *,
        shutdown: Callable[[], None] | None = None,
    ) -> None:
        self.tracer = tracer_provider.get_tracer(SCOPE)
        meter = meter_provider.get_meter(SCOPE)
        self.token_usage: Histogram = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )
        self.duration: Histogram = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self._shutdown = shutdown

    def round(self, agent: str, conversation: str, scenario: str | None) -> OtelRound:
        """Start the span of one agent round."""
        return OtelRound(self, agent, conversation, scenario)

    def shutdown(self) -> None:
        """Flush what is buffered and stop the exporters (blocking: run it in a thread)."""
        if self._shutdown is not None:
            self._shutdown()


def otlp_telemetry(endpoint: str | None, service_name: str) -> OtelTelemetry:
    """Spans and metrics sent over OTLP/HTTP to `endpoint` (a base URL: `/v1/traces` and
    `/v1/metrics` are added), or where the `OTEL_EXPORTER_OTLP_*` variables say when None."""
    base = endpoint.rstrip("/") if endpoint is not None else None
    resource = Resource.create({"service.name": service_name})
    span_exporter = OTLPSpanExporter(endpoint=f"{base}/v1/traces" if base else None)
    metric_exporter = OTLPMetricExporter(endpoint=f"{base}/v1/metrics" if base else None)
    tracer_provider = SdkTracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
    reader = PeriodicExportingMetricReader(metric_exporter)
    meter_provider = SdkMeterProvider(resource=resource, metric_readers=[reader])

    def shutdown() -> None:
        # Side by side: with the collector gone, each waits out its exporter's timeout.
        metrics = threading.Thread(target=meter_provider.shutdown, name="baton-otel-metrics")
        metrics.start()
        tracer_provider.shutdown()
        metrics.join()

    return OtelTelemetry(tracer_provider, meter_provider, shutdown=shutdown)
