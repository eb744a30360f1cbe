"""OpenTelemetry export: GenAI spans of rounds, model calls and tools, events, the token metric."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from baton import Actor, Runtime, handler
from baton.agents.agent_config import AgentConfig
from baton.agents.journal import FileJournalStore
from baton.agents.messages import Prompt
from baton.agents.tools import Toolbox, ToolOutcome
from baton.context.payload import ToolUseBlock
from baton.errors import ConfigError
from baton.models._otel import OtelTelemetry
from baton.models.scripted import Script, ScriptedModel
from baton.models.telemetry import (
    NO_TRACE,
    TelemetryConfig,
    exporting,
    load_telemetry,
    round_trace,
)
from baton.pipeline.config import parse_config
from baton.pipeline.messages import HandoffDelivered
from baton.pipeline.roles import InitActor, agent_setup
from baton.testing import capture_token_log

DESIGN = "scenarios/leave/"
FILES = {
    "unified_scenario_design_path": f"{DESIGN}unified_scenario_design.yaml",
    "business_rules_path": f"{DESIGN}BusinessRules.md",
    "format_specifications_path": f"{DESIGN}format_specifications.json",
}
PROMPT = "design the leave scenario"
SECRET_LINE = "leave balance record"


class Exported:
    """What the in-memory exporter and metric reader received."""

    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.metrics = InMemoryMetricReader()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.telemetry = OtelTelemetry(
            tracer_provider, MeterProvider(metric_readers=[self.metrics])
        )

    def finished(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.name.startswith(prefix)]

    def token_points(self) -> list[tuple[dict[str, Any], int, int]]:
        """`gen_ai.client.token.usage` as (attributes, sum, count) per data point."""
        data = self.metrics.get_metrics_data()
        assert data is not None
        return [
            (dict(point.attributes or {}), int(point.sum), point.count)
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == "gen_ai.client.token.usage"
            for point in metric.data.data_points  # type: ignore[union-attr]
        ]


@pytest.fixture
def exported() -> Iterator[Exported]:
    recorded = Exported()
    with exporting(recorded.telemetry):
        yield recorded


class Recorder(Actor):
    """Stands in for the Scheduler: keeps every handoff it is sent."""

    def __init__(self, received: list[HandoffDelivered]) -> None:
        self.received = received

    @handler
    async def delivered(self, message: HandoffDelivered) -> None:
        self.received.append(message)


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "input": arguments}


async def run_init_round(tmp_path: Path) -> list[dict[str, Any]]:
    """One Init round that reads, writes three files at once, compacts and hands off; the
    token-log lines it wrote."""
    big = "\n".join(f"line {n}: {SECRET_LINE} {'x' * 80}" for n in range(200))
    (tmp_path / "big.txt").write_text(big)
    writes = [tool("Write", path=path, content="x: 1\n") for path in FILES.values()]
    handoff = tool("handoff_to_execute", user_requirement="请假申请", design_artifacts=FILES)
    turns = [
        {"tool_use": tool("Read", path="big.txt")},
        {"tool_use": writes},
        {"tool_use": tool("Read", path="big.txt")},
        {"tool_use": handoff},
        "Handed off.",
    ]
    model = ScriptedModel(Script.model_validate({"actors": {"init": turns}}))
    settings = {
        "model": "claude-opus-4-5",
        "context_window": 40_000,
        "compact_threshold": 12_000,
        "keep_recent_steps": 2,
    }
    received: list[HandoffDelivered] = []
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("scheduler", Recorder, received)
        setup = agent_setup(
            "init",
            AgentConfig.model_validate(settings),
            workspace=tmp_path,
            model=model,
            journal=FileJournalStore(tmp_path),
            token_log=rt.token_log,
            write_paths=(DESIGN,),  # `main` has no scenario folder to write in
        )
        await rt.spawn("init", InitActor, setup)
        with capture_token_log() as lines:
            assert "Handed off." == await rt.ask("init", Prompt(text=PROMPT))
    assert 1 == len(received)
    return lines


async def test_a_round_exports_its_chat_and_tool_spans_under_the_invoke_agent_span(
    tmp_path: Path, exported: Exported
) -> None:
    """One `invoke_agent init` root parents a `chat` span per model call (compaction
    included) and an `execute_tool` span per tool call, all in its trace."""
    lines = await run_init_round(tmp_path)
    calls = [line for line in lines if line["event"] == "model.call"]
    (round_span,) = exported.finished("invoke_agent ")
    chats = exported.finished("chat ")
    tools = exported.finished("execute_tool ")
    assert ("invoke_agent init", SpanKind.INTERNAL, None) == (
        round_span.name,
        round_span.kind,
        round_span.parent,
    )
    assert {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.agent.name": "init",
        "gen_ai.conversation.id": "main",
    } == dict(round_span.attributes or {})
    assert round_span.context is not None
    parents = {(s.context.trace_id, s.parent.span_id) for s in [*chats, *tools] if s.parent}
    assert {(round_span.context.trace_id, round_span.context.span_id)} == parents
    assert len(calls) == len(chats)
    assert {"compaction", "turn"} == {line["purpose"] for line in calls}
    assert ["Read", "Write", "Write", "Write", "Read", "handoff_to_execute"] == [
        s.attributes["gen_ai.tool.name"] for s in sorted(tools, key=lambda s: s.start_time or 0)
    ]
    records = await FileJournalStore(tmp_path).read("init", "main")
    called = [
        (block["name"], block["id"])
        for record in records
        if record["type"] == "step"
        for block in record["step"]["content"]
        if block["type"] == "tool_use"
    ]
    assert sorted(called) == sorted(
        (s.attributes["gen_ai.tool.name"], s.attributes["gen_ai.tool.call.id"]) for s in tools
    )
    assert {("execute_tool", "function", SpanKind.INTERNAL)} == {
        (s.attributes["gen_ai.operation.name"], s.attributes["gen_ai.tool.type"], s.kind)
        for s in tools
    }


async def test_each_chat_span_carries_the_usage_of_its_token_log_line(
    tmp_path: Path, exported: Exported
) -> None:
    """A chat span's attributes match the `model.call` line of the same call; its input tokens
    are the uncached, cache-read and cache-write input summed."""
    lines = await run_init_round(tmp_path)
    calls = {
        (line["purpose"], line["turn"]): line for line in lines if line["event"] == "model.call"
    }
    assert any(line["cache_read_input_tokens"] > 0 for line in calls.values())
    chats = exported.finished("chat ")
    assert len(calls) == len(chats)
    for span in chats:
        attributes = dict(span.attributes or {})
        line = calls[(attributes.pop("baton.purpose"), attributes.pop("baton.turn"))]
        assert {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "anthropic",
            "gen_ai.request.model": "offline-scripted",  # the scripted model's name
            "gen_ai.response.model": line["model"],
            "gen_ai.usage.input_tokens": line["input_tokens"]
            + line["cache_read_input_tokens"]
            + line["cache_creation_input_tokens"],
            "gen_ai.usage.output_tokens": line["output_tokens"],
            "gen_ai.usage.cache_read.input_tokens": line["cache_read_input_tokens"],
            "gen_ai.usage.cache_creation.input_tokens": line["cache_creation_input_tokens"],
            "gen_ai.conversation.id": "main",
            "gen_ai.response.finish_reasons": (line["stop_reason"],),
        } == attributes
        assert ("chat offline-scripted", SpanKind.CLIENT) == (span.name, span.kind)


async def test_compactions_and_handoffs_are_events_on_the_round_span(
    tmp_path: Path, exported: Exported
) -> None:
    """Each `context.compacted` and `handoff.sent` line is an event of the same name and
    figures on the round's span."""
    lines = await run_init_round(tmp_path)
    (round_span,) = exported.finished("invoke_agent ")
    events = [(e.name, dict(e.attributes or {})) for e in round_span.events]
    logged = [
        (line["event"], {k: v for k, v in line.items() if k not in ("ts", "event", "actor")})
        for line in lines
        if line["event"] in ("context.compacted", "handoff.sent")
    ]
    for _, fields in logged:
        for key in ("scenario", "conversation", "process"):
            fields.pop(key)
    assert 2 <= len(logged)
    assert {"context.compacted", "handoff.sent"} == {name for name, _ in logged}
    assert logged == events


async def test_no_message_text_or_tool_input_reaches_a_span(
    tmp_path: Path, exported: Exported
) -> None:
    """The prompt, the files read and written and the tool inputs appear on no span."""
    await run_init_round(tmp_path)
    exported_text = json.dumps(
        [
            [dict(s.attributes or {}), [dict(e.attributes or {}) for e in s.events]]
            for s in exported.spans.get_finished_spans()
        ],
        ensure_ascii=False,
    )
    for secret in (PROMPT, SECRET_LINE, "x: 1", "请假申请", "big.txt", DESIGN):
        assert secret not in exported_text


async def test_the_token_usage_metric_counts_input_and_output_per_model(
    tmp_path: Path, exported: Exported
) -> None:
    """`gen_ai.client.token.usage` holds every call's input (summed rule) and output tokens,
    told apart by `gen_ai.token.type`, with the model and provider attributes."""
    lines = await run_init_round(tmp_path)
    calls = [line for line in lines if line["event"] == "model.call"]
    points = exported.token_points()
    model = calls[0]["model"]
    common = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "offline-scripted",
        "gen_ai.response.model": model,
    }
    expected_input = sum(
        c["input_tokens"] + c["cache_read_input_tokens"] + c["cache_creation_input_tokens"]
        for c in calls
    )
    expected_output = sum(c["output_tokens"] for c in calls)
    assert sorted(
        [
            ({**common, "gen_ai.token.type": "input"}, expected_input, len(calls)),
            ({**common, "gen_ai.token.type": "output"}, expected_output, len(calls)),
        ],
        key=repr,
    ) == sorted(points, key=repr)


async def test_concurrent_rounds_keep_their_own_children(exported: Exported) -> None:
    """Two rounds open at once: each chat and tool span is parented by its own round, whatever
    task runs it and whichever round started last."""
    first = round_trace("init", "leave@1", "leave")
    second = round_trace("execute", "leave@2", "leave")
    both_open = anyio.Event()

    async def chat_under_first() -> None:
        await both_open.wait()
        with first.chat("claude-opus-4-5", purpose="turn", turn=0):
            await anyio.lowlevel.checkpoint()

    async def tool_under_second() -> None:
        await both_open.wait()
        use: ToolUseBlock = {"type": "tool_use", "id": "toolu_2", "name": "Read", "input": {}}
        with second.tool(use) as ended:
            await anyio.lowlevel.checkpoint()
            ended(True)

    async with anyio.create_task_group() as group:
        group.start_soon(chat_under_first)
        group.start_soon(tool_under_second)
        both_open.set()
    first.end()
    second.end()
    rounds = {s.attributes["gen_ai.agent.name"]: s for s in exported.finished("invoke_agent ")}
    (chat,) = exported.finished("chat ")
    (tool_span,) = exported.finished("execute_tool ")
    assert rounds["init"].context is not None
    assert rounds["execute"].context is not None
    assert chat.parent is not None
    assert tool_span.parent is not None
    assert rounds["init"].context.span_id == chat.parent.span_id
    assert rounds["execute"].context.span_id == tool_span.parent.span_id
    assert rounds["init"].context.trace_id != rounds["execute"].context.trace_id
    assert (StatusCode.ERROR, "tool_error") == (
        tool_span.status.status_code,
        tool_span.attributes["error.type"],
    )


async def test_a_failed_tool_call_marks_its_span_and_the_others_stay_ok(
    exported: Exported,
) -> None:
    """A toolbox run with an observer: the failing call's span is an error, the other is not."""

    class Echo:
        name = "Echo"
        description = "echo"

        class input_model:  # noqa: N801 - stands in for a pydantic model class
            @staticmethod
            def model_validate(value: Any) -> Any:
                return value

        async def run(self, args: Any) -> ToolOutcome:
            return ToolOutcome("no", is_error=bool(args.get("fail")))

    trace = round_trace("init", "main", None)
    uses: list[ToolUseBlock] = [
        {"type": "tool_use", "id": "ok", "name": "Echo", "input": {}},
        {"type": "tool_use", "id": "bad", "name": "Echo", "input": {"fail": True}},
    ]
    await Toolbox([Echo()]).results(uses, observe=trace.tool)  # type: ignore[list-item]
    trace.end()
    statuses = {
        s.attributes["gen_ai.tool.call.id"]: s.status.status_code
        for s in exported.finished("execute_tool ")
    }
    assert {"ok": StatusCode.UNSET, "bad": StatusCode.ERROR} == statuses


def test_rounds_are_not_traced_while_nothing_is_exported() -> None:
    """Outside `exporting`, a round's trace is the no-op one."""
    assert NO_TRACE is round_trace("init", "main", None)


def test_telemetry_is_off_without_an_endpoint() -> None:
    """No `otlp_endpoint` and no OTLP variable: nothing is built."""
    assert None is load_telemetry(TelemetryConfig(), environ={})


@pytest.mark.parametrize(
    "endpoint", ["127.0.0.1:4318", "ftp://collector:4318", "http://", "collector"]
)
def test_an_otlp_endpoint_that_is_not_an_http_url_is_refused(endpoint: str) -> None:
    """`[telemetry] otlp_endpoint` must be an http(s) URL; the error names the key."""
    with pytest.raises(ConfigError, match=r"telemetry\.otlp_endpoint"):
        parse_config({"telemetry": {"otlp_endpoint": endpoint}})


def test_unknown_telemetry_keys_are_refused() -> None:
    """A typo in `[telemetry]` is an error naming the key, not a silent default."""
    with pytest.raises(ConfigError, match=r"telemetry\.endpoint"):
        parse_config({"telemetry": {"endpoint": "http://127.0.0.1:4318"}})
