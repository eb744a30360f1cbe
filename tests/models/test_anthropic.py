"""AnthropicModel: the real SDK against the local Messages API stand-in."""

from __future__ import annotations

import io
import json
import logging
import traceback
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
import structlog
from anthropic import AsyncAnthropic
from anyio import wait_all_tasks_blocked
from structlog.testing import capture_logs

from baton.context.errors import InvalidRequestError
from baton.context.payload import Payload, ToolSpec
from baton.context.tokens import estimate_payload_tokens
from baton.errors import ConfigError
from baton.models.anthropic import SDK_NONSTREAMING_MAX_TOKENS, AnthropicModel, Backoff
from baton.models.errors import ContextOverflowError, ModelCallFailure
from baton.models.protocol import CallContext, ModelResponse, bind_call
from baton.testing import MessagesAPIStandIn

READ_TOOL: ToolSpec = {
    "name": "Read",
    "description": "Read a file of the workspace.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}


def ask(text: str = "Summarise the design.", max_tokens: int = 1024) -> Payload:
    return {"max_tokens": max_tokens, "messages": [{"role": "user", "content": text}]}


class Sleeps:
    """An injectable sleep that records what it was asked to wait and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


async def test_a_plain_call_returns_the_reply_and_its_usage() -> None:
    """A small call is one non-streaming request; the reply, stop reason and usage come back."""
    async with MessagesAPIStandIn() as api, api.model("claude-opus-4-5") as model:
        api.reply("The design has three parts.")
        response = await model.create(ask())
        (request,) = api.requests_to("messages")
    assert [{"type": "text", "text": "The design has three parts."}] == response.content
    assert "end_turn" == response.stop_reason
    assert "claude-opus-4-5" == response.model
    assert estimate_payload_tokens(ask()) == response.usage.input_tokens
    assert 0 < response.usage.output_tokens
    assert ("claude-opus-4-5", False) == (request.body["model"], request.stream)
    assert (True, "[redacted]") == (request.authorized, request.headers["authorization"])


async def test_a_tool_use_round_trip_sends_back_a_valid_tool_result() -> None:
    """A tool_use reply goes back with its tool_result; the stand-in accepts the follow-up."""
    async with MessagesAPIStandIn() as api, api.model() as model:
        api.reply({"text": "Reading it.", "tool_use": {"name": "Read", "input": {"path": "a.md"}}})
        api.reply("It says hello.")
        first: Payload = {**ask("What does a.md say?"), "tools": [READ_TOOL]}
        call = await model.create(first)
        (tool_use,) = call.tool_uses
        second: Payload = {
            **first,
            "messages": [
                *first["messages"],
                {"role": "assistant", "content": call.content},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": tool_use["id"], "content": "hello"}
                    ],
                },
            ],
        }
        answer = await model.create(second)
        statuses = [r.status for r in api.requests_to("messages")]
    assert ("tool_use", {"path": "a.md"}, "Read") == (
        call.stop_reason,
        tool_use["input"],
        tool_use["name"],
    )
    assert "It says hello." == answer.text
    assert [200, 200] == statuses


@pytest.mark.parametrize(
    ("max_tokens", "streamed"), [(4000, False), (8192, False), (8193, True), (64_000, True)]
)
async def test_large_max_tokens_stream(max_tokens: int, streamed: bool) -> None:
    """Calls above `stream_above` (8192) use messages.stream and assemble the same reply."""
    reply = {"text": "x" * 100, "tool_use": {"name": "Read", "input": {"path": "a/b/c.md"}}}
    async with MessagesAPIStandIn() as api, api.model() as model:
        api.reply(reply)
        response = await model.create(ask(max_tokens=max_tokens))
        (request,) = api.requests_to("messages")
    assert streamed == request.stream
    assert ("x" * 100, {"path": "a/b/c.md"}) == (response.text, response.tool_uses[0]["input"])
    assert "tool_use" == response.stop_reason


async def test_the_sdk_refuses_large_non_streaming_calls() -> None:
    """The SDK's ten-minute rule is why large calls stream: it rejects them unstreamed."""
    async with MessagesAPIStandIn() as api:
        client = AsyncAnthropic(api_key=api.api_key, base_url=api.base_url)
        async with client:
            with pytest.raises(ValueError, match="Streaming is required"):
                await client.messages.create(
                    model="claude-opus-4-5",
                    max_tokens=SDK_NONSTREAMING_MAX_TOKENS + 1,
                    messages=[{"role": "user", "content": "Write a long report."}],
                )
    with pytest.raises(ConfigError, match="stream_above"):
        AnthropicModel("claude-opus-4-5", api_key="k", stream_above=SDK_NONSTREAMING_MAX_TOKENS + 1)


@pytest.mark.parametrize("status", [429, 529, 500])
async def test_the_sdk_retries_a_failed_status_then_succeeds(status: int) -> None:
    """429, 529 and 500 are retried by the SDK (honouring retry-after) until the call works."""
    async with MessagesAPIStandIn() as api, api.model() as model:
        api.fail(status)
        response = await model.create(ask())
        statuses = [r.status for r in api.requests_to("messages")]
    assert [status, 200] == statuses
    assert response.text.startswith("Stand-in reply to:")


async def test_429_529_and_500_in_a_row_fit_in_four_retries() -> None:
    """Three different failures in a row are absorbed by the default four SDK retries."""
    async with MessagesAPIStandIn() as api, api.model() as model:
        api.fail(429)
        api.fail(529)
        api.fail(500)
        await model.create(ask())
        statuses = [r.status for r in api.requests_to("messages")]
    assert [429, 529, 500, 200] == statuses


async def test_a_failure_outlasting_the_retries_is_a_model_call_failure() -> None:
    """After max_retries the failure surfaces as ModelCallFailure naming status and type."""
    async with MessagesAPIStandIn() as api, api.model(max_retries=2) as model:
        api.fail(529, times=3)
        with pytest.raises(ModelCallFailure, match="HTTP 529 overloaded_error") as caught:
            await model.create(ask())
        attempts = len(api.requests_to("messages"))
    assert 3 == attempts
    assert "overloaded_error" == caught.value.__cause__.type  # type: ignore[union-attr]


async def test_a_mid_stream_overload_is_retried_with_backoff() -> None:
    """An overloaded_error inside a 200 stream is retried by baton after a backoff sleep."""
    sleeps = Sleeps()
    backoff = Backoff(initial=1.0, factor=2.0, maximum=30.0, jitter=0.25)
    async with (
        MessagesAPIStandIn() as api,
        api.model(sleep=sleeps, backoff=backoff, rand=lambda: 0.0) as model,
    ):
        api.fail_mid_stream(times=2)
        api.reply("Recovered.")
        response = await model.create(ask(max_tokens=32_000))
        requests = api.requests_to("messages")
    assert "Recovered." == response.text
    assert [1.0, 2.0] == sleeps.delays
    assert [(200, True, "mid_stream:overloaded_error")] * 2 + [(200, True, None)] == [
        (r.status, r.stream, r.fault) for r in requests
    ]


async def test_a_mid_stream_overload_that_persists_fails_after_the_stream_retries() -> None:
    """When every stream breaks off, the call fails after `stream_retries` retries."""
    sleeps = Sleeps()
    async with MessagesAPIStandIn() as api, api.model(sleep=sleeps, stream_retries=2) as model:
        api.fail_mid_stream(times=3)
        with pytest.raises(ModelCallFailure, match="broke off with overloaded_error"):
            await model.create(ask(max_tokens=32_000))
        attempts = len(api.requests_to("messages"))
    assert (3, 2) == (attempts, len(sleeps.delays))


async def test_prompt_too_long_becomes_context_overflow() -> None:
    """The API's `prompt is too long: N tokens > M maximum` is ContextOverflowError(N, M)."""
    payload = ask("word " * 400)
    legacy = "claude-opus-4-5"  # the estimator's own tokenizer: the counts compare as they are
    async with MessagesAPIStandIn(context_window=100) as api, api.model(legacy) as model:
        with pytest.raises(ContextOverflowError) as caught:
            await model.create(payload)
        attempts = len(api.requests_to("messages"))
    assert (estimate_payload_tokens(payload), 100) == (caught.value.tokens, caught.value.maximum)
    assert 1 == attempts  # a 400 is not retried


async def test_an_invalid_request_is_an_invalid_request_error() -> None:
    """A payload breaking the API's rules comes back as InvalidRequestError with its reason."""
    bad: Payload = {"max_tokens": 100, "messages": [{"role": "assistant", "content": "hi"}]}
    async with MessagesAPIStandIn() as api, api.model("claude-opus-4-5") as model:
        with pytest.raises(InvalidRequestError, match="first message must use the user role"):
            await model.create(bad)


async def test_count_tokens_sends_only_what_the_endpoint_takes() -> None:
    """count_tokens returns the API's count and drops max_tokens, stop_sequences and the like."""
    payload: Payload = {
        **ask("Count me."),
        "system": "You are terse.",
        "tools": [READ_TOOL],
        "stop_sequences": ["END"],
    }
    async with MessagesAPIStandIn() as api, api.model("claude-opus-4-5") as model:
        count = await model.count_tokens(payload)
        (request,) = api.requests_to("count_tokens")
    assert estimate_payload_tokens(payload) == count
    assert ["messages", "model", "system", "tools"] == sorted(request.body)


async def test_limits_come_from_the_models_api_once() -> None:
    """limits() reads max_input_tokens, max_tokens and lifecycle, then serves from its cache."""
    async with MessagesAPIStandIn() as api, api.model("claude-haiku-4-5") as model:
        first = await model.limits()
        second = await model.limits()
        lookups = len(api.requests_to("models"))
    assert (200_000, 64_000, "active", "models_api") == (
        first.context_window,
        first.max_output_tokens,
        first.lifecycle,
        first.source,
    )
    assert (first, 1) == (second, lookups)


async def test_limits_carry_the_lifecycle_line_and_the_capabilities() -> None:
    """A deprecated model's limits say so, with its dates and line; the request rules take the
    Models API's capabilities (the start check turns these into a warning)."""
    async with MessagesAPIStandIn() as api, api.model("claude-sonnet-4-5") as model:
        limits = await model.limits()
        await model.create(ask())  # the SDK's own per-call DeprecationWarning is muted
    assert ("deprecated", "2026-11-30", "sonnet") == (
        limits.lifecycle,
        f"{limits.retires_at:%Y-%m-%d}",
        limits.line,
    )
    assert limits.rules is not None
    assert "enabled" in limits.rules.thinking_types


async def test_current_models_lists_the_newest_active_model_of_each_line() -> None:
    """`current_models()` reads the Models API list: the newest active id per line."""
    async with MessagesAPIStandIn() as api, api.model("claude-opus-5-5") as model:
        current = await model.current_models()
    assert {
        "opus": "claude-opus-5-5",
        "sonnet": "claude-sonnet-5-5",
        "haiku": "claude-haiku-5-5",
        "fable": "claude-fable-5-1",
    } == current


async def test_limits_fall_back_to_config_and_look_again_later() -> None:
    """An unknown model falls back to the configured limits; the lookup is retried later."""
    now = [0.0]
    async with MessagesAPIStandIn() as api:
        model = api.model(
            "claude-opus-4-5",
            context_window=150_000,
            max_output_tokens=4_000,
            limits_retry_s=60.0,
            clock=lambda: now[0],
            max_retries=0,
        )
        async with model:
            api.fail(503, endpoint="models")
            with capture_logs() as logs:
                fallback = await model.limits()
                again = await model.limits()  # inside the retry window: no new lookup
            lookups_before = len(api.requests_to("models"))
            now[0] = 61.0
            recovered = await model.limits()
            lookups_after = len(api.requests_to("models"))
    assert (150_000, 4_000, "config") == (
        fallback.context_window,
        fallback.max_output_tokens,
        fallback.source,
    )
    assert ["model.limits_fallback"] == [line["event"] for line in logs]
    assert (fallback, 1) == (again, lookups_before)
    assert ("models_api", 200_000, 2) == (
        recovered.source,
        recovered.context_window,
        lookups_after,
    )


async def test_an_unknown_model_is_known_to_be_unavailable() -> None:
    """A model id the Models API answers 404 for keeps the configured window and is marked
    unavailable, once: the answer is cached, not asked again."""
    async with (
        MessagesAPIStandIn() as api,
        api.model("claude-next", context_window=123_000) as model,
    ):
        limits = await model.limits()
        await model.limits()
        lookups = len(api.requests_to("models"))
    assert (123_000, "models_api", False, 1) == (
        limits.context_window,
        limits.source,
        limits.available,
        lookups,
    )


async def test_the_environment_supplies_key_and_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL are enough to reach the stand-in."""
    async with MessagesAPIStandIn(api_key="sk-ant-from-env") as api:
        for name, value in api.env().items():
            monkeypatch.setenv(name, value)
        async with AnthropicModel("claude-opus-4-5") as model:
            await model.create(ask())
        (request,) = api.requests_to("messages")
    assert (True, api.base_url) == (request.authorized, model.base_url.rstrip("/"))


def test_without_a_key_the_model_refuses_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ANTHROPIC_API_KEY and no api_key= is a ConfigError that names the variable."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        AnthropicModel("claude-opus-4-5")


async def test_concurrency_is_capped_per_model() -> None:
    """With max_concurrency=2, two calls are in flight while two wait on the limiter."""
    replies: list[ModelResponse] = []

    async def call(model: AnthropicModel, n: int) -> None:
        with bind_call(CallContext(actor=f"a{n}", turn=0)):
            replies.append(await model.create(ask(f"call {n}")))

    async with MessagesAPIStandIn() as api, api.model(max_concurrency=2) as model:
        async with anyio.create_task_group() as tg:
            with api.hold():
                for n in range(4):
                    tg.start_soon(call, model, n)
                await api.wait_in_flight(2)
                await wait_all_tasks_blocked()
                seen = (api.in_flight, model.limiter.statistics().tasks_waiting)
        peak = api.max_in_flight
    assert (2, 2) == seen
    assert (2, 4) == (peak, len(replies))


@pytest.fixture
def all_logs() -> Iterator[io.StringIO]:
    """Every log line (structlog and stdlib, SDK and HTTP loggers at DEBUG) into one buffer."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    names = ["", "anthropic", "httpx2", "httpcore2", "uvicorn", "baton"]
    levels = {name: logging.getLogger(name).level for name in names}
    root.addHandler(handler)
    for name in names:
        logging.getLogger(name).setLevel(logging.DEBUG)
    # No redaction processor here: the test checks the key never reaches a line at all.
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        logger_factory=structlog.PrintLoggerFactory(buffer),
        cache_logger_on_first_use=False,
    )
    try:
        yield buffer
    finally:
        structlog.reset_defaults()
        root.removeHandler(handler)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


async def test_a_failing_call_leaves_no_trace_of_the_key(all_logs: io.StringIO) -> None:
    """Logs, errors, tracebacks, reprs and request records of failing calls never hold the key."""
    key = "sk-ant-api03-" + "Secret7Key" * 4
    wrong_key = "sk-ant-api03-" + "WrongKey99" * 4
    failures: list[BaseException] = []
    async with MessagesAPIStandIn(api_key=key) as api:
        async with api.model(max_retries=2) as model:
            api.fail(500, times=3)
            with (
                bind_call(CallContext(actor="execute", turn=3)),
                pytest.raises(ModelCallFailure) as caught,
            ):
                await model.create(ask())
            failures.append(caught.value)
            structlog.get_logger("test").exception("call failed", exc_info=caught.value)
            reprs = repr(model)
        async with AnthropicModel(
            "claude-opus-4-5", api_key=wrong_key, base_url=api.base_url
        ) as rejected:
            with pytest.raises(ConfigError) as refused:
                await rejected.create(ask())
            failures.append(refused.value)
            reprs += repr(rejected)
        records = json.dumps([r.headers for r in api.requests])
        authorized = [r.authorized for r in api.requests_to("messages")]
    logs = all_logs.getvalue()
    texts = [logs, reprs, records] + [
        "".join(traceback.format_exception(e)) + repr(e) for e in failures
    ]
    assert [True, True, True, False] == authorized
    assert "Retrying request to /v1/messages" in logs  # the SDK's own lines were captured
    assert "model.call_failed" in logs
    assert [] == [t for t in texts if key in t or wrong_key in t]


def test_backoff_grows_caps_and_jitters() -> None:
    """Delays double per attempt up to the cap; jitter only ever shortens them."""
    backoff = Backoff(initial=1.0, factor=2.0, maximum=5.0, jitter=0.5)
    delays: list[Any] = [backoff.delay(n, 0.0) for n in range(4)]
    assert [1.0, 2.0, 4.0, 5.0] == delays
    assert 2.5 == backoff.delay(5, 1.0)
