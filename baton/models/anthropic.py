"""`AnthropicModel`: Claude through the official SDK's `AsyncAnthropic` client.

What it adds to the SDK:

* non-streaming calls for small `max_tokens`, `messages.stream` above `stream_above` — the SDK
  refuses a non-streaming call it expects to run past ten minutes (about 21K output tokens);
* the SDK's own retries (`max_retries`, default 4) for 408/409/429/5xx/529, which honour the
  server's `retry-after-ms` / `retry-after`; an `overloaded_error` (or `api_error`) that
  arrives *inside* a stream comes with HTTP 200 and the SDK does not retry it, so this client
  does, with its own jittered exponential backoff on an injectable sleep;
* a 400 `prompt is too long: N tokens > M maximum` becomes `ContextOverflowError(N, M)`, so the
  actor can compact and retry once; other failures become baton errors that say what to do;
* a per-model concurrency limit (an anyio `CapacityLimiter`, shareable between instances);
* `limits()` from the Models API, cached, with the configured values as the fallback: window,
  output cap, lifecycle, line, and the request rules with the model's capabilities;
  `current_models()` lists the newest active model of each line;
* the model's request rules (`baton.models.rules`) checked before anything is sent: a
  forced `tool_choice`, sampling parameters, a prefill or a thinking setting the model
  refuses is an `InvalidRequestError` that says what to change, not a 400 from the API;
* thinking and redacted-thinking blocks kept in the reply exactly as received, so the tool
  loop can send them back;
* server-side context management: a payload with `betas` or `context_management` goes to the
  SDK's beta Messages API (`betas` as the `anthropic-beta` header, never in the body); the
  reply's `compaction` block is kept verbatim, its `context_management` report and the
  compaction's own `usage.iterations` entry are read into the response (docs/context.md,
  "Server-side context management").

The key comes from `api_key=` or `ANTHROPIC_API_KEY`, the endpoint from `base_url=` or
`ANTHROPIC_BASE_URL`. The key is handed to the SDK and nowhere else: no log line, error message
or repr of this module contains it.
"""

from __future__ import annotations

import os
import random
import re
import time
import warnings
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Self, cast

import anyio
from anthropic import APIConnectionError, APIStatusError, AsyncAnthropic, DefaultAsyncHttpxClient
from anthropic.types import Message
from anthropic.types.beta import BetaMessage

from baton._log import get_logger
from baton.context.errors import InvalidRequestError
from baton.context.payload import Payload
from baton.context.server_edits import edit_problems
from baton.errors import BatonError, ConfigError
from baton.models._sdk_reply import to_response
from baton.models.errors import ContextOverflowError, ModelCallFailure
from baton.models.protocol import ModelLimits, ModelResponse, current_call
from baton.models.rules import ModelRules, current_models, request_problems, rules_for, thinks
from baton.models.throttle import ModelThrottle
from baton.runtime.backoff import Backoff

log = get_logger(__name__)

SDK_NONSTREAMING_MAX_TOKENS = 21_333
"""Above this `max_tokens` the SDK refuses a non-streaming call (its estimate, 128K tokens an
hour, passes ten minutes); some older models have a lower per-model limit (8,192)."""
DEFAULT_STREAM_ABOVE = 8_192
LOOKUP_TIMEOUT_S = 3.0
"""How long a Models API lookup may take, with no retry, before the configured limits serve."""
"""Calls asking for more output than this stream; below it they are plain requests."""

_PROMPT_TOO_LONG = re.compile(r"prompt is too long: (\d+) tokens > (\d+) maximum")
# Error types the API sends inside an HTTP-200 stream that mean "try again", as 529/500 would.
_IN_STREAM_RETRYABLE = frozenset({"overloaded_error", "api_error"})

Sleep = Callable[[float], Awaitable[None]]


def _silence_sdk_model_deprecation() -> None:
    # The SDK emits a DeprecationWarning on *every* call naming a model on its list; the
    # start check reports a deprecated model once, with its successor (docs/models.md), and
    # a per-call warning would fail every test suite that runs with `-W error`. Installed
    # per call because test runners reset the warning filters for each test.
    warnings.filterwarnings(
        "ignore", message=r"The model '.*' is deprecated", category=DeprecationWarning
    )


class AnthropicModel:
    """The online `Model`: one Claude model behind `AsyncAnthropic`. Use it as `async with`."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 4,
        max_concurrency: int = 4,
        limiter: anyio.CapacityLimiter | None = None,
        context_window: int = 200_000,
        max_output_tokens: int = 16_000,
        stream_above: int = DEFAULT_STREAM_ABOVE,
        stream_retries: int = 4,
        backoff: Backoff | None = None,
        timeout: float | None = None,
        limits_retry_s: float = 300.0,
        sleep: Sleep = anyio.sleep,
        clock: Callable[[], float] = time.monotonic,
        rand: Callable[[], float] = random.random,
    ) -> None:
        if stream_above > SDK_NONSTREAMING_MAX_TOKENS:
            raise ConfigError(
                f"stream_above={stream_above} is above {SDK_NONSTREAMING_MAX_TOKENS}, where the "
                "SDK refuses non-streaming calls; lower it"
            )
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise ConfigError(
                "no API key: set ANTHROPIC_API_KEY (or pass api_key=) to use Claude; without "
                "one, baton runs the offline scripted model"
            )
        self._throttle = ModelThrottle(model, clock=clock, sleep=sleep)

        async def saw(response: Any) -> None:
            self._throttle.saw(response.status_code, response.headers)

        options: dict[str, Any] = {
            "api_key": key,
            "max_retries": max_retries,
            "http_client": DefaultAsyncHttpxClient(event_hooks={"response": [saw]}),
        }
        if base_url is not None:
            options["base_url"] = base_url
        if timeout is not None:
            options["timeout"] = timeout
        self._client = AsyncAnthropic(**options)
        self._name = model
        self._max_retries = max_retries
        self._limiter = limiter or anyio.CapacityLimiter(max_concurrency)
        self._rules = rules_for(model)
        self._fallback = ModelLimits(
            model=model,
            context_window=context_window,
            max_output_tokens=max_output_tokens,
            rules=self._rules,
            source="config",
        )
        self._stream_above = stream_above
        self._stream_retries = stream_retries
        self._backoff = backoff or Backoff()
        self._limits: ModelLimits | None = None
        self._limits_retry_at = 0.0
        self._limits_retry_s = limits_retry_s
        self._limits_lock = anyio.Lock()
        self._sleep = sleep
        self._clock = clock
        self._rand = rand

    @property
    def name(self) -> str:
        """The model id sent with every request that does not name one."""
        return self._name

    @property
    def base_url(self) -> str:
        """Where requests go (`ANTHROPIC_BASE_URL` or the public API)."""
        return str(self._client.base_url)

    @property
    def rules(self) -> ModelRules:
        """What requests the model accepts (with its capabilities once `limits()` ran)."""
        limits = self._limits
        if limits is not None and limits.rules is not None:
            return limits.rules
        return self._rules

    @property
    def throttle(self) -> ModelThrottle:
        """The pause a 429 imposes on every request to this model."""
        return self._throttle

    @property
    def limiter(self) -> anyio.CapacityLimiter:
        """The concurrency limit; pass it to another instance to share it."""
        return self._limiter

    def __repr__(self) -> str:
        return f"AnthropicModel(model={self._name!r}, base_url={self.base_url!r})"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()

    async def create(self, payload: Payload) -> ModelResponse:
        """Send `payload` (streaming when `max_tokens` is large) and return the reply."""
        body: dict[str, Any] = {**payload, "model": payload.get("model") or self._name}
        betas: list[str] | None = body.pop("betas", None)
        rules = self.rules if body["model"] == self._name else rules_for(body["model"])
        problems = request_problems(body, rules)
        problems += edit_problems(body, betas or [], thinks=thinks(body, rules))
        if problems:
            raise InvalidRequestError(problems)
        stream = body["max_tokens"] > self._stream_above
        async with self._limiter:
            await self._throttle.wait()  # a 429 to any conversation holds back every one
            started = self._clock()
            message = await self._send(body, stream, betas)
            latency_ms = max(0.0, (self._clock() - started) * 1000)
        response = to_response(message, latency_ms)
        log.debug(
            "model.reply",
            model=response.model,
            stream=stream,
            stop_reason=response.stop_reason,
            latency_ms=round(latency_ms, 1),
            **response.usage.model_dump(),
            **_call_fields(),
        )
        return response

    async def count_tokens(self, payload: Payload) -> int:
        """Input tokens of `payload` as the API counts them (system, tools and messages)."""
        body: dict[str, Any] = {k: v for k, v in payload.items() if k in ("system", "tools")}
        body["messages"] = payload["messages"]
        body["model"] = payload.get("model") or self._name
        betas = payload.get("betas")
        # Not under the limiter: counting is a cheap, separately rate-limited endpoint, and an
        # actor checking its budget should not queue behind generations.
        try:
            if betas is None and "context_management" not in payload:
                counted = await self._client.messages.count_tokens(**body)
                return counted.input_tokens
            # The server counts what its edits leave (clear_thinking needs the thinking).
            managed = ("context_management", "thinking")
            body.update({k: v for k, v in payload.items() if k in managed})
            beta = await self._client.beta.messages.count_tokens(**body, **_betas(betas))
        except APIStatusError as exc:
            raise self._translate(exc) from exc
        except APIConnectionError as exc:
            raise self._unreachable(exc) from exc
        return beta.input_tokens

    async def limits(self) -> ModelLimits:
        """The window and output cap from the Models API, cached; the configured values if not.

        A failed lookup is retried after `limits_retry_s`; until then the fallback is cached
        too, so a down Models API does not slow every turn.
        """
        async with self._limits_lock:
            cached = self._limits
            if cached is not None and (
                cached.source == "models_api" or self._clock() < self._limits_retry_at
            ):
                return cached
            self._limits = await self._lookup_limits()
            return self._limits

    async def _lookup_limits(self) -> ModelLimits:
        try:
            info = await self._lookups().models.retrieve(self._name)
        except APIStatusError as exc:
            if exc.status_code == 404:
                # Known for sure: no such model (any more). Cached like a success: asking
                # again will not bring it back.
                return self._fallback.model_copy(
                    update={"available": False, "source": "models_api"}
                )
            return self._limits_fallback(exc)
        except APIConnectionError as exc:
            return self._limits_fallback(exc)
        capabilities = info.capabilities.model_dump() if info.capabilities is not None else None
        return ModelLimits(
            model=self._name,
            context_window=info.max_input_tokens or self._fallback.context_window,
            max_output_tokens=info.max_tokens or self._fallback.max_output_tokens,
            lifecycle=info.lifecycle,
            deprecated_at=info.deprecated_at,
            retires_at=info.retires_at,
            line=info.line,
            rules=self._rules.with_capabilities(capabilities),
            source="models_api",
        )

    def _lookups(self) -> AsyncAnthropic:
        # A lookup is worth a few seconds, never the client's whole retry budget: the
        # configured limits answer instead, and the start says so (docs/models.md, "The
        # Models API").
        return self._client.with_options(max_retries=0, timeout=LOOKUP_TIMEOUT_S)

    def _limits_fallback(self, exc: APIStatusError | APIConnectionError) -> ModelLimits:
        self._limits_retry_at = self._clock() + self._limits_retry_s
        reason = _describe(exc)
        log.warning(
            "model.limits_fallback",
            model=self._name,
            reason=reason,
            context_window=self._fallback.context_window,
            max_output_tokens=self._fallback.max_output_tokens,
        )
        return self._fallback.model_copy(update={"unanswered": reason})

    async def current_models(self) -> dict[str, str]:
        """The newest active model of each line, from the Models API (empty if unreachable)."""
        try:
            lookups = self._lookups()
            listed = [info.model_dump(mode="json") async for info in lookups.models.list()]
        except (APIStatusError, APIConnectionError) as exc:
            log.warning("model.list_failed", reason=_describe(exc))
            return {}
        return current_models(listed)

    async def _send(
        self, body: dict[str, Any], stream: bool, betas: list[str] | None
    ) -> Message | BetaMessage:
        attempt = 0
        cause: Exception
        while True:
            try:
                return await self._attempt(body, stream, betas)
            except APIStatusError as exc:
                if attempt < self._stream_retries and _retryable_in_stream(exc):
                    delay = self._backoff.delay(attempt, self._rand())
                    attempt += 1
                    log.warning(
                        "model.stream_error_retry",
                        model=self._name,
                        error_type=exc.type,
                        attempt=attempt,
                        delay_s=round(delay, 3),
                        **_call_fields(),
                    )
                    await self._sleep(delay)
                    continue
                failure, cause = self._translate(exc), exc
            except APIConnectionError as exc:
                failure, cause = self._unreachable(exc), exc
            log.warning(
                "model.call_failed",
                model=self._name,
                error=type(failure).__name__,
                detail=str(failure),
                **_call_fields(),
            )
            raise failure from cause

    async def _attempt(
        self, body: dict[str, Any], stream: bool, betas: list[str] | None
    ) -> Message | BetaMessage:
        _silence_sdk_model_deprecation()
        call = current_call()
        headers = call.headers() if call is not None else {}
        if betas is not None or "context_management" in body:
            beta = self._client.beta.messages
            if stream:
                async with beta.stream(**body, **_betas(betas), extra_headers=headers) as events:
                    return await events.get_final_message()
            created = await beta.create(**body, **_betas(betas), extra_headers=headers)
            return cast(BetaMessage, created)
        if stream:
            async with self._client.messages.stream(**body, extra_headers=headers) as events:
                return await events.get_final_message()
        return cast(Message, await self._client.messages.create(**body, extra_headers=headers))

    def _translate(self, exc: APIStatusError) -> BatonError:
        status = exc.status_code
        kind = exc.type or "error"
        message = exc.api_message or str(exc)
        if status == 400 and (match := _PROMPT_TOO_LONG.search(message)):
            return ContextOverflowError(int(match[1]), int(match[2]))
        if status in (401, 403):
            return ConfigError(
                f"the Messages API refused the credentials (HTTP {status} {kind}: {message}); "
                "check ANTHROPIC_API_KEY"
            )
        if status == 404:
            return ConfigError(
                f"the Messages API does not know model {self._name!r} ({message}); fix the "
                "model name in baton.toml"
            )
        if status == 400:
            return InvalidRequestError([message])
        if status == 200:
            return ModelCallFailure(
                f"{self._name}: the stream broke off with {kind} ({message}) on "
                f"{self._stream_retries + 1} attempts; retry later or raise stream_retries"
            )
        return ModelCallFailure(
            f"{self._name}: the Messages API answered HTTP {status} {kind} ({message}) after "
            f"{self._max_retries} retries; retry later or raise max_retries"
        )

    def _unreachable(self, exc: APIConnectionError) -> BatonError:
        return ModelCallFailure(
            f"could not reach the Messages API at {self.base_url} for {self._name} after "
            f"{self._max_retries} retries ({type(exc).__name__}); check ANTHROPIC_BASE_URL and "
            "the network"
        )


def _retryable_in_stream(exc: APIStatusError) -> bool:
    # HTTP errors were already retried by the SDK; only an error event inside a 200 stream
    # reaches here still retryable.
    return exc.status_code == 200 and exc.type in _IN_STREAM_RETRYABLE


def _describe(exc: APIStatusError | APIConnectionError) -> str:
    if isinstance(exc, APIStatusError):
        return f"HTTP {exc.status_code} {exc.type or ''}: {exc.api_message or ''}".strip()
    return type(exc).__name__


def _betas(betas: list[str] | None) -> dict[str, Any]:
    return {} if betas is None else {"betas": betas}


def _call_fields() -> dict[str, Any]:
    call = current_call()
    return call.log_fields() if call is not None else {}
