"""Fakes for testing code built on baton, shipped for your tests as well as ours.

`ScriptedModel`
    The offline model: replies from a script (per actor, by turn) or a policy callable, with
    usage figures from baton's token estimator and a prompt-cache simulation; it plays
    server-side context management as the stand-in below does. Bind a
    `CallContext` around each call (`with bind_call(...)`) to pick the actor and turn; read
    `model.calls` / `model.calls_for(actor)` to see what each actor sent::

        model = ScriptedModel({"actors": {"execute": ["first reply", "second reply"]}})

`MessagesAPIStandIn`
    A real HTTP server on 127.0.0.1 (a free port) that speaks the Messages API closely enough
    for the real `anthropic` SDK: `POST /v1/messages` (JSON, and SSE when `stream` is true),
    `POST /v1/messages/count_tokens`, `GET /v1/models` (newest first, paged by `limit`,
    `after_id`, `before_id`) and `GET /v1/models/{id}`. Each request is checked like the API
    checks it (`x-api-key` or bearer key, `anthropic-version`, the documented message rules,
    known model, `max_tokens` cap, prompt length) and a broken one gets the API's 400 error
    body. Replies come from `api.reply(...)` in order, then from `policy`. Faults are
    queued per endpoint: `api.fail(529, times=2)`, `api.fail_mid_stream()`,
    `api.delay(0.5)`, or `api.inject(Fault(...))`; `context_window=` makes longer prompts fail
    with `prompt is too long: N tokens > M maximum`. Every request is kept in `api.requests`
    with its key redacted. Injected errors carry `retry-after-ms: 1`, which the SDK honours,
    so retry tests take milliseconds::

        async with MessagesAPIStandIn() as api:
            api.reply("hello", {"tool_use": {"name": "Read", "input": {"path": "a.md"}}})
            api.fail(429)
            async with api.model("claude-opus-5-5") as model:   # an AnthropicModel
                reply = await model.create({"max_tokens": 256, "messages": [...]})
            assert [429, 200] == [r.status for r in api.requests_to("messages")]

    The models (`DEFAULT_MODELS`, or `models=` rows of `StandInModel`) are those of November
    2026: Opus, Sonnet and Haiku 5.5 and Fable 5.1 current; Opus/Sonnet 5 and Opus/Haiku 4.5
    active but older; Sonnet 4.5 deprecated; Opus 4.1, Opus 4 and Sonnet 4 retired (listed,
    but `messages` and `count_tokens` naming them answer 404). Each row's `capabilities` and
    the rules of `baton.models.rules` decide the model-specific 400s: a forced
    `tool_choice` on Opus/Sonnet 5.5, an assistant prefill on 5.x, a `thinking.type` or
    effort level the model does not take, `budget_tokens` not below `max_tokens`. A row's
    `token_ratio` (1.3 from the 4.7 generation on) scales usage, the cache split,
    `count_tokens` and the prompt-length check: estimate x ratio, rounded up.

    Thinking: a request with `thinking.type` `adaptive` or `enabled`, or none on a model that
    always thinks (Opus 5.5, Fable 5.1), gets a `thinking` block first, its text empty under
    display `omitted` (those two models' default; the request's `thinking.display` wins),
    else "Considering: <the last user text>". `redacted_thinking_every=N` adds a
    `redacted_thinking` block to every Nth reply that thinks. On a row with
    `between_tools_as_thinking` (Sonnet 5.5) the text right before a tool call comes back as
    a thinking block. Signatures are `<base64url claims>.<HMAC>` under a secret of each
    stand-in, binding a block to its model, its content and its prefix (`system`, `tools` and
    every block before it, `cache_control` ignored). A block sent back forged or changed is a
    400 ("Invalid `signature` in `thinking` block", or "... cannot be modified" in the
    latest assistant message); one behind a changed prefix is a 400 too unless the
    request sets `thinking.block_binding.prefix_mismatch_behavior: "drop_block"`; one from
    another model is dropped. Dropped blocks are listed in `RecordedRequest.dropped_blocks`
    (`DroppedBlock`). A tool result answering a reply that thought must follow that reply
    sent back whole, thinking included (older turns may leave their thinking out)::

        reply = await client.messages.create(model="claude-opus-5-5", ...)
        messages += [{"role": "assistant", "content": reply.content}, tool_results]

    Server-side context management (docs/context.md, "Server-side context management"): a
    request naming betas in `anthropic-beta` may send `context_management` edits, checked as
    the API checks them (each edit needs its beta; shapes, the 50,000-token compaction
    minimum, `clear_thinking_20251015` first and only with thinking; a model row whose
    `capabilities.context_management` says unsupported refuses the edit) and played by
    `baton.context.server_edits`, as the offline `ScriptedModel` plays them: blocks before
    the latest `compaction` block are ignored (thinking there is never checked),
    `clear_tool_uses_20250919` clears before the input is counted and is reported in
    `context_management.applied_edits`, and past the `compact_20260112` trigger the reply
    starts with a signed `compaction` block (alone, `stop_reason: "compaction"`, under
    `pause_after_compaction`; a pause uses no queued reply), billed in a `compaction` entry
    of `usage.iterations` outside the top-level counts. A compaction block sent back changed
    is a 400; streamed, it arrives in one `compaction_delta`::

        reply = await client.beta.messages.create(
            model="claude-opus-5-5", max_tokens=1024, messages=messages,
            betas=["compact-2026-01-12"],
            context_management={"edits": [{"type": "compact_20260112",
                                            "pause_after_compaction": True}]},
        )

    Point other code at it with `api.env()` (`ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`).
    `api.hold()` keeps replies waiting (with `api.in_flight` and `await api.wait_in_flight(n)`)
    to observe concurrency. It runs on the asyncio backend (it is served by uvicorn). Enter it
    in the test body: a pytest-asyncio yield fixture sets up and tears down in different tasks,
    which the stand-in's task group does not allow (anyio's pytest plugin does not have that
    problem).

`capture_token_log()`, `read_token_log(path_or_workspace)`
    The token log without parsing it by hand. `with capture_token_log() as records:` collects
    every record any `TokenLog` in the process emits inside the block (a runtime with or
    without a workspace), in order, as the validated dicts written to the file (`ts`
    included); blocks nest. `read_token_log` reads a log file, or a workspace's
    `.baton/logs/tokens.jsonl`, rotated files first, oldest first (`skip_torn=True` skips a
    line a killed process left unfinished)::

        with capture_token_log() as records:
            async with Runtime.open(workspace) as rt:   # a fresh workspace
                ...
        assert read_token_log(workspace) == records
"""

from __future__ import annotations

from baton.models.protocol import CallContext, bind_call
from baton.models.scripted import (
    OFFLINE_MODEL_NAME,
    ActorScript,
    Script,
    ScriptedCall,
    ScriptedModel,
    ScriptedResponse,
)
from baton.testing._standin_models import DEFAULT_MODELS, StandInModel
from baton.testing._standin_server import DEFAULT_API_KEY, MessagesAPIStandIn
from baton.testing._standin_state import (
    FAST_RETRY_AFTER,
    Fault,
    RecordedRequest,
    StandInPolicy,
    default_standin_policy,
)
from baton.testing._standin_thinking import HIDDEN_THINKING_TOKENS, DroppedBlock
from baton.testing._token_log import capture_token_log, read_token_log

__all__ = [
    "DEFAULT_API_KEY",
    "DEFAULT_MODELS",
    "FAST_RETRY_AFTER",
    "HIDDEN_THINKING_TOKENS",
    "OFFLINE_MODEL_NAME",
    "ActorScript",
    "CallContext",
    "DroppedBlock",
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
    "capture_token_log",
    "default_standin_policy",
    "read_token_log",
]
