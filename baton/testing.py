"""Fakes for testing code built on baton, shipped for your tests as well as ours.

`ScriptedModel`
    The offline model: replies from a script (per actor, by turn) or a policy callable, with
    usage figures from baton's token estimator and a prompt-cache simulation. Bind a
    `CallContext` around each call (`with bind_call(...)`) to pick the actor and turn; read
    `model.calls` / `model.calls_for(actor)` to see what each actor sent::

        model = ScriptedModel({"actors": {"execute": ["first reply", "second reply"]}})

`MessagesAPIStandIn`
    A real HTTP server on 127.0.0.1 (a free port) that speaks the Messages API closely enough
    for the real `anthropic` SDK: `POST /v1/messages` (JSON, and SSE when `stream` is true),
    `POST /v1/messages/count_tokens` and `GET /v1/models/{id}`. Each request is checked like
    the API checks it (`x-api-key` or bearer key, `anthropic-version`, the documented message
    rules, known model, `max_tokens` cap, prompt length) and a broken one gets the API's 400
    error body. Replies come from `api.reply(...)` in order, then from `policy`. Faults are
    queued per endpoint: `api.fail(529, times=2)`, `api.fail_mid_stream()`,
    `api.delay(0.5)`, or `api.inject(Fault(...))`; `context_window=` makes longer prompts fail
    with `prompt is too long: N tokens > M maximum`. Every request is kept in `api.requests`
    with its key redacted. Injected errors carry `retry-after-ms: 1`, which the SDK honours,
    so retry tests take milliseconds::

        async with MessagesAPIStandIn() as api:
            api.reply("hello", {"tool_use": {"name": "Read", "input": {"path": "a.md"}}})
            api.fail(429)
            async with api.model("claude-opus-4-5") as model:   # an AnthropicModel
                reply = await model.create({"max_tokens": 256, "messages": [...]})
            assert [429, 200] == [r.status for r in api.requests_to("messages")]

    Point other code at it with `api.env()` (`ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`).
    `api.hold()` keeps replies waiting (with `api.in_flight` and `await api.wait_in_flight(n)`)
    to observe concurrency. It runs on the asyncio backend (it is served by uvicorn). Enter it
    in the test body: a pytest-asyncio yield fixture sets up and tears down in different tasks,
    which the stand-in's task group does not allow (anyio's pytest plugin does not have that
    problem).
"""

from __future__ import annotations

from baton._standin_app import (
    FAST_RETRY_AFTER,
    Fault,
    RecordedRequest,
    StandInPolicy,
    default_standin_policy,
)
from baton._standin_server import DEFAULT_API_KEY, MessagesAPIStandIn
from baton._standin_wire import DEFAULT_MODELS, StandInModel
from baton.actors.model import CallContext, bind_call
from baton.actors.scripted_model import (
    OFFLINE_MODEL_NAME,
    ActorScript,
    Script,
    ScriptedCall,
    ScriptedModel,
    ScriptedResponse,
)

__all__ = [
    "DEFAULT_API_KEY",
    "DEFAULT_MODELS",
    "FAST_RETRY_AFTER",
    "OFFLINE_MODEL_NAME",
    "ActorScript",
    "CallContext",
    "Fault",
    "MessagesAPIStandIn",
    "RecordedRequest",
    "Script",
    "ScriptedCall",
    "ScriptedModel",
    "ScriptedResponse",
    "StandInModel",
    "StandInPolicy",
    "bind_call",
    "default_standin_policy",
]
