"""A 429 holds back every conversation's requests to that model for its retry-after, not
only the request that got it."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from structlog.testing import capture_logs

from baton import Runtime
from baton.context.payload import Payload
from baton.models.anthropic import AnthropicModel
from baton.models.throttle import DEFAULT_PAUSE, MAX_PAUSE, ModelThrottle, retry_after
from baton.pipeline.host import open_pipeline
from baton.testing import MessagesAPIStandIn


def ask(text: str) -> Payload:
    return {"max_tokens": 256, "messages": [{"role": "user", "content": text}]}


class FrozenClock:
    """A clock that moves only when the code under test sleeps on it."""

    def __init__(self) -> None:
        self.now = 1_000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await anyio.lowlevel.checkpoint()


async def test_a_429_to_one_conversation_holds_back_the_next_request_of_another() -> None:
    """The SDK retries the refused request after the API's retry-after; a request another
    conversation makes meanwhile waits out the same pause before it is sent."""
    clock = FrozenClock()
    async with MessagesAPIStandIn() as api, api.model(clock=clock, sleep=clock.sleep) as model:
        api.fail(429, retry_after=0.25)
        with capture_logs() as logs:
            first = await model.create(ask("first conversation"))
        assert [] == clock.sleeps  # nothing held the first request back: no 429 yet
        second = await model.create(ask("second conversation"))
        statuses = [r.status for r in api.requests_to("messages")]
    assert [429, 200, 200] == statuses
    assert [0.25] == clock.sleeps
    assert first.text.startswith("Stand-in reply to: first")
    assert second.text.startswith("Stand-in reply to: second")
    throttled = [e for e in logs if e["event"] == "model.throttled"]
    assert [("claude-opus-5-5", 0.25)] == [(e["model"], e["retry_after_s"]) for e in throttled]


async def test_answers_that_are_not_429_hold_nothing_back() -> None:
    """A 529 or 500 is retried by the SDK for its own request only."""
    clock = FrozenClock()
    async with MessagesAPIStandIn() as api, api.model(clock=clock, sleep=clock.sleep) as model:
        api.fail(529)
        api.fail(500)
        await model.create(ask("one"))
        await model.create(ask("two"))
    assert [] == clock.sleeps
    assert 0 == model.throttle.pauses


def test_the_pause_follows_the_headers_within_bounds() -> None:
    """retry-after-ms before retry-after, an HTTP date, a default when none, a cap."""
    assert 0.5 == retry_after({"retry-after-ms": "500", "retry-after": "9"})
    assert 9.0 == retry_after({"retry-after": "9"})
    assert 30.0 == retry_after({"retry-after": "Thu, 01 Jan 2026 00:00:30 GMT"}, now=1767225600.0)
    assert retry_after({}) is None
    clock = FrozenClock()
    throttle = ModelThrottle("m", clock=clock, sleep=clock.sleep)
    throttle.saw(429, {})
    assert clock.now + DEFAULT_PAUSE == throttle.until
    throttle.saw(429, {"retry-after": "86400"})
    assert clock.now + MAX_PAUSE == throttle.until
    throttle.saw(200, {"retry-after": "99999"})
    assert clock.now + MAX_PAUSE == throttle.until


async def test_every_waiting_caller_is_released_when_the_pause_ends() -> None:
    """Callers waiting on one pause all go once it is over; a later 429 extends it."""
    clock = FrozenClock()
    throttle = ModelThrottle("m", clock=clock, sleep=clock.sleep)
    throttle.saw(429, {"retry-after": "2"})
    released: list[int] = []

    async def caller(n: int) -> None:
        await throttle.wait()
        released.append(n)

    async with anyio.create_task_group() as tasks:
        for n in range(3):
            tasks.start_soon(caller, n)
    assert [0, 1, 2] == sorted(released)
    assert clock.now >= throttle.until


async def test_agents_on_one_model_share_one_client_sized_for_the_largest_ask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Init and Execute on the same model get one client, so one limiter and one 429 pause;
    its size is the larger of their `max_concurrency`."""
    (tmp_path / "baton.toml").write_text(
        '[actors.init]\nmodel = "claude-sonnet-5-5"\nmax_concurrency = 2\n'
        '[actors.execute]\nmodel = "claude-sonnet-5-5"\nmax_concurrency = 5\n',
        encoding="utf-8",
    )
    async with MessagesAPIStandIn() as api:
        for key, value in api.env().items():
            monkeypatch.setenv(key, value)
        async with Runtime.open(tmp_path) as rt, open_pipeline(rt, environ=api.env()) as pipeline:
            models = dict(pipeline.models)
    shared = models["claude-sonnet-5-5"]
    assert isinstance(shared, AnthropicModel)
    assert 5 == shared.limiter.total_tokens
    assert {"claude-sonnet-5-5", "claude-haiku-5-5"} == set(models)
