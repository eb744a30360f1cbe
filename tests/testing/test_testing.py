"""baton.testing: the Messages API stand-in, checked with the real SDK and raw HTTP."""

from __future__ import annotations

import logging
from typing import Any

import anthropic
import anyio
import httpx2
import pytest
from anthropic import AsyncAnthropic

import baton.testing
from baton.context.tokens import estimate_payload_tokens
from baton.testing import Fault, MessagesAPIStandIn

MODEL = "claude-haiku-4-5"
HELLO: list[Any] = [{"role": "user", "content": "Hello"}]


def sdk(api: MessagesAPIStandIn, **options: Any) -> AsyncAnthropic:
    return AsyncAnthropic(api_key=api.api_key, base_url=api.base_url, **options)


def headers(api: MessagesAPIStandIn) -> dict[str, str]:
    return {"x-api-key": api.api_key or "", "anthropic-version": "2023-06-01"}


def test_every_public_name_exists() -> None:
    """Each name in baton.testing.__all__ can be imported from it."""
    assert [] == [name for name in baton.testing.__all__ if not hasattr(baton.testing, name)]


async def test_a_plain_request_gets_a_complete_message() -> None:
    """The SDK parses the stand-in's JSON Message: content, stop reason, model and usage."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        api.reply("Hi there.")
        message = await client.messages.create(model=MODEL, max_tokens=100, messages=HELLO)
    assert ["Hi there."] == [block.text for block in message.content if block.type == "text"]
    assert ("end_turn", MODEL, "assistant") == (message.stop_reason, message.model, message.role)
    assert estimate_payload_tokens({"messages": HELLO}) == message.usage.input_tokens


async def test_a_stream_has_the_api_event_sequence_and_reassembles() -> None:
    """SSE events come in the documented order and the SDK rebuilds text and tool input."""
    reply = {"text": "Let me read " * 5, "tool_use": {"name": "Read", "input": {"path": "a/b.md"}}}
    async with MessagesAPIStandIn(chunk_chars=8) as api, sdk(api) as client:
        api.reply(reply)
        api.reply(reply)
        raw = await client.messages.create(model=MODEL, max_tokens=100, messages=HELLO, stream=True)
        kinds = [event.type async for event in raw]
        async with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
            final = await stream.get_final_message()
    # The tool input ({"path": "a/b.md"}, 18 characters) comes as an empty delta and 3 pieces.
    text_deltas = kinds.count("content_block_delta") - 4
    assert (
        ["message_start", "content_block_start"]
        + ["content_block_delta"] * text_deltas
        + ["content_block_stop", "content_block_start"]
        + ["content_block_delta"] * 4
        + ["content_block_stop", "message_delta", "message_stop"]
    ) == kinds
    assert 1 < text_deltas
    assert ("Let me read " * 5, {"path": "a/b.md"}, "tool_use") == (
        final.content[0].text,  # type: ignore[union-attr]
        final.content[1].input,  # type: ignore[union-attr]
        final.stop_reason,
    )


async def test_the_raw_stream_names_every_event_and_pings() -> None:
    """On the wire every event has an `event:` line, and a ping follows message_start."""
    async with MessagesAPIStandIn() as api, httpx2.AsyncClient() as http:
        body = {"model": MODEL, "max_tokens": 10, "messages": HELLO, "stream": True}
        response = await http.post(f"{api.base_url}/v1/messages", json=body, headers=headers(api))
    names = [
        line[len("event: ") :] for line in response.text.splitlines() if line.startswith("event:")
    ]
    assert "text/event-stream" == response.headers["content-type"].split(";")[0]
    assert ["message_start", "ping", "content_block_start"] == names[:3]
    assert ["message_delta", "message_stop"] == names[-2:]


async def test_an_invalid_request_gets_the_api_400_shape() -> None:
    """A request breaking the documented rules is a 400 invalid_request_error naming the rule."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        with pytest.raises(anthropic.BadRequestError) as caught:
            await client.messages.create(
                model=MODEL, max_tokens=10, messages=[{"role": "assistant", "content": "Hi"}]
            )
        (request,) = api.requests
    body = caught.value.body
    assert isinstance(body, dict)
    assert ("error", "invalid_request_error") == (body["type"], body["error"]["type"])
    assert "messages.0: The first message must use the user role" == body["error"]["message"]
    assert (400, ("messages.0: The first message must use the user role",)) == (
        request.status,
        request.problems,
    )
    assert body["request_id"] == caught.value.request_id


async def test_a_wrong_key_is_a_401_and_a_missing_version_a_400() -> None:
    """Authentication and the anthropic-version header are checked like the API checks them."""
    async with MessagesAPIStandIn() as api:
        async with AsyncAnthropic(api_key="wrong", base_url=api.base_url) as client:
            with pytest.raises(anthropic.AuthenticationError):
                await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
        async with httpx2.AsyncClient() as http:
            body = {"model": MODEL, "max_tokens": 10, "messages": HELLO}
            unversioned = await http.post(
                f"{api.base_url}/v1/messages", json=body, headers={"x-api-key": api.api_key or ""}
            )
    assert 400 == unversioned.status_code
    assert "anthropic-version: header is required" == unversioned.json()["error"]["message"]
    assert [(401, False), (400, True)] == [(r.status, r.authorized) for r in api.requests]


async def test_unknown_models_and_oversized_max_tokens_are_refused() -> None:
    """A model not in the table is a 404; max_tokens above the model's cap is a 400."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        with pytest.raises(anthropic.NotFoundError, match="model: claude-nope"):
            await client.messages.create(model="claude-nope", max_tokens=10, messages=HELLO)
        with pytest.raises(anthropic.BadRequestError, match="max_tokens: 64001 > 64000"):
            async with client.messages.stream(model=MODEL, max_tokens=64_001, messages=HELLO):
                pass


async def test_a_prompt_over_the_window_is_too_long() -> None:
    """Above `context_window` the 400 carries the API's exact `prompt is too long` message."""
    messages: list[Any] = [{"role": "user", "content": "word " * 100}]
    tokens = estimate_payload_tokens({"messages": messages})
    async with MessagesAPIStandIn(context_window=20) as api, sdk(api) as client:
        with pytest.raises(anthropic.BadRequestError) as caught:
            await client.messages.create(model=MODEL, max_tokens=10, messages=messages)
    assert f"prompt is too long: {tokens} tokens > 20 maximum" == caught.value.api_message


async def test_count_tokens_counts_and_refuses_max_tokens() -> None:
    """count_tokens returns the estimate; a max_tokens field there is an extra input."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        counted = await client.messages.count_tokens(
            model=MODEL, messages=HELLO, system="Be brief."
        )
        async with httpx2.AsyncClient() as http:
            refused = await http.post(
                f"{api.base_url}/v1/messages/count_tokens",
                json={"model": MODEL, "max_tokens": 5, "messages": HELLO},
                headers=headers(api),
            )
    assert (
        estimate_payload_tokens({"messages": HELLO, "system": "Be brief."}) == counted.input_tokens
    )
    assert (400, "max_tokens: Extra inputs are not permitted") == (
        refused.status_code,
        refused.json()["error"]["message"],
    )


async def test_the_models_api_reports_limits_and_lifecycle() -> None:
    """GET /v1/models/{id} parses as the SDK's ModelInfo; unknown ids are 404."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        info = await client.models.retrieve("claude-sonnet-4-5")
        with pytest.raises(anthropic.NotFoundError):
            await client.models.retrieve("claude-nope")
    assert (1_000_000, 64_000, "deprecated", "2026-11-30") == (
        info.max_input_tokens,
        info.max_tokens,
        info.lifecycle,
        info.retires_at.date().isoformat() if info.retires_at else None,
    )


async def test_injected_errors_carry_retry_after_which_the_sdk_honours(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An injected 429 sends retry-after-ms 1; the SDK waits exactly that long, then succeeds."""
    async with MessagesAPIStandIn() as api, sdk(api, max_retries=1) as client:
        api.fail(429)
        with caplog.at_level(logging.INFO, logger="anthropic"):
            await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
        async with httpx2.AsyncClient() as http:
            api.fail(529, retry_after=2.5)
            raw = await http.post(
                f"{api.base_url}/v1/messages",
                json={"model": MODEL, "max_tokens": 10, "messages": HELLO},
                headers=headers(api),
            )
    assert ["Retrying request to /v1/messages in 0.001000 seconds"] == [
        r.getMessage() for r in caplog.records if r.name.startswith("anthropic")
    ]
    assert ("2500", "3", "overloaded_error") == (
        raw.headers["retry-after-ms"],
        raw.headers["retry-after"],
        raw.json()["error"]["type"],
    )


async def test_a_mid_stream_fault_breaks_off_with_an_error_event() -> None:
    """fail_mid_stream: the stream starts, then an overloaded_error event ends it (HTTP 200)."""
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        api.fail_mid_stream()
        api.reply("kept for the retry")
        with pytest.raises(anthropic.APIStatusError) as caught:
            async with client.messages.stream(model=MODEL, max_tokens=10, messages=HELLO) as s:
                await s.get_final_message()
        retried = await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert (200, "overloaded_error") == (caught.value.status_code, caught.value.type)
    assert "kept for the retry" == retried.content[0].text  # type: ignore[union-attr]


async def test_a_mid_stream_fault_on_a_plain_request_is_a_529() -> None:
    """Without streaming, the same overload arrives as the HTTP 529 the API would send."""
    async with MessagesAPIStandIn() as api, sdk(api, max_retries=0) as client:
        api.fail_mid_stream()
        with pytest.raises(anthropic.OverloadedError):
            await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)


async def test_a_delay_beyond_the_client_timeout_is_retried() -> None:
    """A delayed reply makes the SDK time out and retry; closing the stand-in does not hang."""
    async with MessagesAPIStandIn() as api, sdk(api, timeout=0.2, max_retries=1) as client:
        api.delay(30)
        message = await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    faults = sorted(str(r.fault) for r in api.requests_to("messages"))
    assert "end_turn" == message.stop_reason
    assert ["None", "delay:30s"] == faults


async def test_faults_are_per_endpoint_and_in_order() -> None:
    """A fault queued for one endpoint leaves the others alone; faults are used in order."""
    async with MessagesAPIStandIn() as api, sdk(api, max_retries=0) as client:
        api.inject(Fault(endpoint="count_tokens", status=500))
        api.fail(429, times=2)
        await client.models.retrieve(MODEL)
        statuses: list[int] = []
        for _ in range(3):
            try:
                await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
            except anthropic.RateLimitError as exc:
                statuses.append(exc.status_code)
            else:
                statuses.append(200)
        with pytest.raises(anthropic.InternalServerError):
            await client.messages.count_tokens(model=MODEL, messages=HELLO)
    assert [429, 429, 200] == statuses


async def test_the_prompt_cache_shows_in_usage() -> None:
    """A repeated cache_control-marked system prompt is written once, then read."""
    system: list[Any] = [
        {"type": "text", "text": "Rules. " * 800, "cache_control": {"type": "ephemeral"}}
    ]
    async with MessagesAPIStandIn() as api, sdk(api) as client:
        usages = [
            (
                await client.messages.create(
                    model=MODEL, max_tokens=10, system=system, messages=HELLO
                )
            ).usage
            for _ in range(2)
        ]
    written = usages[0].cache_creation_input_tokens
    assert 1024 <= (written or 0)
    assert [written, 0] == [
        usages[0].cache_creation_input_tokens,
        usages[1].cache_creation_input_tokens,
    ]
    assert [0, written] == [usages[0].cache_read_input_tokens, usages[1].cache_read_input_tokens]


async def test_an_unknown_path_is_a_404_in_the_api_shape() -> None:
    """Routes the stand-in does not serve answer with the API's not_found_error body."""
    async with MessagesAPIStandIn() as api, httpx2.AsyncClient() as http:
        response = await http.get(f"{api.base_url}/v1/nothing", headers=headers(api))
    assert (404, "not_found_error") == (response.status_code, response.json()["error"]["type"])


async def test_held_replies_wait_until_released() -> None:
    """Inside hold(), requests stay in flight; the stand-in reports how many at once."""

    async def create(client: AsyncAnthropic) -> None:
        await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)

    async with MessagesAPIStandIn() as api, sdk(api) as client:
        async with anyio.create_task_group() as tg:
            with api.hold():
                for _ in range(3):
                    tg.start_soon(create, client)
                await api.wait_in_flight(3)
                held = api.in_flight
        answered = len(api.requests_to("messages"))
    assert (3, 0, 3, 3) == (held, api.in_flight, api.max_in_flight, answered)
