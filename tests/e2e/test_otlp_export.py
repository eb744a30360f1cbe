"""`baton run` with `[telemetry] otlp_endpoint`: spans and metrics reach an OTLP/HTTP receiver."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

ROOT = Path(__file__).resolve().parents[2]
NAME = "leave_application"
CLI = "import sys\nfrom baton.server.cli import main\nsys.exit(main(sys.argv[1:]))\n"


class Receiver(ThreadingHTTPServer):
    """A local OTLP/HTTP receiver: keeps each POSTed body by its path."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.bodies: dict[str, list[bytes]] = {}
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with self.server.lock:
            self.server.bodies.setdefault(self.path, []).append(body)
        reply = ExportTraceServiceResponse().SerializeToString()  # empty: all accepted
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def value(any_value: AnyValue) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return tuple(value(v) for v in any_value.array_value.values)
    return getattr(any_value, kind) if kind else None


def attributes(pairs: Iterator[KeyValue] | Any) -> dict[str, Any]:
    return {pair.key: value(pair.value) for pair in pairs}


@pytest.mark.parametrize("configured_by", ["baton.toml", "environment"])
def test_baton_run_exports_chat_spans_and_the_token_metric_over_otlp_http(
    tmp_path: Path, receiver: Receiver, configured_by: str
) -> None:
    """The Quickstart's main job with `[telemetry] otlp_endpoint` (or the standard variables):
    at exit the receiver holds a `chat` span per `model.call` line (input tokens summed), each
    under an `invoke_agent` span, with the configured service name, and the token metric."""
    folder = tmp_path / "scenarios" / NAME
    folder.mkdir(parents=True)
    for name in ("scenario.toml", "offline_script.json"):
        shutil.copy(ROOT / "scenarios" / NAME / name, folder)
    environ = {
        k: v
        for k, v in os.environ.items()
        if k != "ANTHROPIC_API_KEY" and not k.startswith(("OTEL_", "BATON_"))
    }
    if configured_by == "baton.toml":
        (tmp_path / "baton.toml").write_text(
            f'[telemetry]\notlp_endpoint = "{receiver.url}"\nservice_name = "baton-e2e"\n',
            encoding="utf-8",
        )
    else:
        environ |= {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SERVICE_NAME": "baton-e2e"}
    args = ("run", "--submit", NAME, "--auto-approve", "--exit-when-idle")
    result = subprocess.run(
        [sys.executable, "-c", CLI, *args],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert 0 == result.returncode, result.stderr
    assert f"ended {NAME}: completed" in result.stdout

    spans: list[tuple[Span, dict[str, Any]]] = []
    services = set()
    for body in receiver.bodies.get("/v1/traces", []):
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            services.add(attributes(resource_spans.resource.attributes)["service.name"])
            for scope in resource_spans.scope_spans:
                spans.extend((span, attributes(span.attributes)) for span in scope.spans)
    assert {"baton-e2e"} == services
    rounds = {
        span.span_id: attrs["gen_ai.agent.name"]
        for span, attrs in spans
        if span.name.startswith("invoke_agent ")
    }
    assert {"init", "execute"} <= set(rounds.values())
    assert {NAME} == {
        attrs.get("baton.scenario") for span, attrs in spans if span.span_id in rounds
    } - {None}
    chats = [(span, attrs) for span, attrs in spans if span.name.startswith("chat ")]
    tools = [span for span, _ in spans if span.name.startswith("execute_tool ")]
    assert tools
    assert all(span.parent_span_id in rounds for span in tools)
    log = (tmp_path / ".baton" / "logs" / "tokens.jsonl").read_text(encoding="utf-8")
    calls = [line for line in map(json.loads, log.splitlines()) if line["event"] == "model.call"]
    assert calls
    assert len(calls) == len(chats)
    assert all(span.parent_span_id in rounds for span, _ in chats)
    assert {(Span.SpanKind.SPAN_KIND_CLIENT, "chat", "anthropic")} == {
        (span.kind, attrs["gen_ai.operation.name"], attrs["gen_ai.provider.name"])
        for span, attrs in chats
    }
    assert sorted(
        (
            c["input_tokens"] + c["cache_read_input_tokens"] + c["cache_creation_input_tokens"],
            c["output_tokens"],
            c["cache_read_input_tokens"],
            c["model"],
            c["conversation"],
            (c["stop_reason"],),
        )
        for c in calls
    ) == sorted(
        (
            attrs["gen_ai.usage.input_tokens"],
            attrs["gen_ai.usage.output_tokens"],
            attrs["gen_ai.usage.cache_read.input_tokens"],
            attrs["gen_ai.response.model"],
            attrs["gen_ai.conversation.id"],
            attrs["gen_ai.response.finish_reasons"],
        )
        for _, attrs in chats
    )
    metrics = {
        metric.name
        for body in receiver.bodies.get("/v1/metrics", [])
        for resource_metrics in ExportMetricsServiceRequest.FromString(body).resource_metrics
        for scope in resource_metrics.scope_metrics
        for metric in scope.metrics
    }
    assert "gen_ai.client.token.usage" in metrics
