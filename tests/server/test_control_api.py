"""Control API in-process: every endpoint, its status codes and error bodies, bad input."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpx2
from anyio.from_thread import start_blocking_portal
from control_actors import (
    Failing,
    FakeScheduler,
    Greeter,
    Reporter,
    Stuck,
    quick_policy,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from baton.actors.messages import ScenarioState
from baton.runtime import ContextFill, Runtime
from baton.server import create_control_app
from baton.server.control_api import _CatchAll


@dataclass
class Api:
    runtime: Runtime
    http: httpx2.AsyncClient
    stops: list[bool] = field(default_factory=list)
    scenarios: dict[str, ScenarioState] = field(default_factory=dict)

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        response = await self.http.request(method, path, json=body)
        return response.status_code, response.json()


@asynccontextmanager
async def serve_api(workspace: Path | None, *, scheduler: bool = False) -> AsyncIterator[Api]:
    release = anyio.Event()
    async with Runtime.open(workspace, policy=quick_policy(), shutdown_timeout=1) as runtime:
        await runtime.spawn("greeter", Greeter)
        await runtime.spawn("failing", Failing)
        await runtime.spawn("stuck", Stuck, release)
        await runtime.spawn(
            "reporter",
            Reporter,
            runtime.context_providers,
            ContextFill.of(150_000, 200_000, 150_000),
        )
        stops: list[bool] = []
        app = create_control_app(runtime, on_stop=lambda: stops.append(True))
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://baton") as http:
            api = Api(runtime, http, stops)
            if scheduler:
                await runtime.spawn("scheduler", FakeScheduler, api.scenarios)
            try:
                yield api
            finally:
                release.set()


def error_of(body: Any) -> tuple[str, str]:
    return body["error"]["type"], body["error"]["message"]


async def test_health_names_the_process(tmp_path: Path) -> None:
    """GET /health answers 200 with this process's pid and the workspace."""
    async with serve_api(tmp_path) as api:
        status, body = await api.call("GET", "/health")
        workspace = str(api.runtime.workspace)
    assert (200, "ok", workspace) == (status, body["status"], body["workspace"])


async def test_status_reports_actors_context_and_dead_letters(tmp_path: Path) -> None:
    """GET /status lists each actor with counters, the registered context fill, dead letters."""
    async with serve_api(tmp_path) as api:
        await api.call("POST", "/actors/failing/tell", {"type": "Boom"})
        with anyio.fail_after(5):
            await api.runtime.dead_letters.wait_total(1)
        status, body = await api.call("GET", "/status")
    actors = {actor["name"]: actor for actor in body["actors"]}
    assert 200 == status
    assert ["failing", "greeter", "reporter", "stuck"] == sorted(actors)
    assert ("running", 0, 1024) == (
        actors["greeter"]["state"],
        actors["greeter"]["mailbox_depth"],
        actors["greeter"]["mailbox_capacity"],
    )
    assert 3 == actors["failing"]["failures"]
    assert {
        "context_tokens": 150_000,
        "context_window": 200_000,
        "compact_threshold": 150_000,
        "fill": 0.75,
    } == actors["reporter"]["context"]
    assert actors["greeter"]["context"] is None
    assert (1, False, []) == (body["dead_letters"], body["scheduler"], body["scenarios"])


async def test_tell_queues_and_ask_replies_as_json(tmp_path: Path) -> None:
    """tell answers 202; ask answers 200 with the reply model dumped as JSON and its type."""
    async with serve_api(tmp_path) as api:
        told = await api.call(
            "POST", "/actors/greeter/tell", {"type": "Hello", "payload": {"name": "a"}}
        )
        asked = await api.call(
            "POST", "/actors/greeter/ask", {"type": "Hello", "payload": {"name": "b"}}
        )
    assert (202, {"actor": "greeter", "type": "Hello", "queued": True}) == told
    assert (200, {"actor": "greeter", "type": "Greeting", "reply": {"text": "hi b"}}) == asked


async def test_unknown_actor_is_404_naming_the_known_ones(tmp_path: Path) -> None:
    """A message to a name no actor has answers 404 UnknownActorError listing known actors."""
    async with serve_api(tmp_path) as api:
        status, body = await api.call("POST", "/actors/nobody/ask", {"type": "Hello"})
    kind, message = error_of(body)
    assert (404, "UnknownActorError") == (status, kind)
    assert "known actors: failing, greeter, reporter, stuck" in message


async def test_a_type_the_actor_does_not_take_is_400(tmp_path: Path) -> None:
    """An unknown message type answers 400 InvalidMessageError naming the accepted types."""
    async with serve_api(tmp_path) as api:
        status, body = await api.call("POST", "/actors/greeter/tell", {"type": "Nope"})
    assert (400, "InvalidMessageError") == (status, error_of(body)[0])
    assert "it accepts: Hello" in error_of(body)[1]


async def test_an_invalid_payload_is_422_naming_the_field(tmp_path: Path) -> None:
    """A payload the message class rejects answers 422 InvalidPayloadError naming the field."""
    async with serve_api(tmp_path) as api:
        status, body = await api.call(
            "POST", "/actors/greeter/ask", {"type": "Hello", "payload": {"nam": "x"}}
        )
    kind, message = error_of(body)
    assert (422, "InvalidPayloadError") == (status, kind)
    assert "name: Field required" in message


async def test_a_malformed_body_is_422_saying_what_to_send(tmp_path: Path) -> None:
    """A body that is not JSON, or lacks `type`, answers 422 ControlRequestError."""
    async with serve_api(tmp_path) as api:
        not_json = await api.http.post("/actors/greeter/tell", content=b"{nope")
        no_type = await api.call("POST", "/actors/greeter/tell", {"payload": {}})
    assert (422, "ControlRequestError") == (not_json.status_code, error_of(not_json.json())[0])
    assert (422, "ControlRequestError") == (no_type[0], error_of(no_type[1])[0])
    assert "body.type: Field required" in error_of(no_type[1])[1]


async def test_an_ask_that_times_out_is_504(tmp_path: Path) -> None:
    """An ask the actor does not answer within `timeout` answers 504 AskTimeoutError."""
    async with serve_api(tmp_path) as api:
        status, body = await api.call(
            "POST", "/actors/stuck/ask", {"type": "Wait", "timeout": 0.05}
        )
    assert (504, "AskTimeoutError", 0.05) == (
        status,
        error_of(body)[0],
        body["error"]["details"]["timeout"],
    )


async def test_a_failing_handler_is_502_with_the_cause(tmp_path: Path) -> None:
    """An ask whose handler keeps raising answers 502 HandlerFailedError carrying the cause."""
    async with serve_api(tmp_path) as api:
        status, body = await api.call("POST", "/actors/failing/ask", {"type": "Boom"})
        after = await api.call(
            "POST", "/actors/greeter/ask", {"type": "Hello", "payload": {"name": "x"}}
        )
    assert (502, "HandlerFailedError") == (status, error_of(body)[0])
    assert {"type": "ValueError", "message": "boom"} == body["error"]["details"]["cause"]
    assert 200 == after[0]


async def test_scenario_endpoints_without_a_scheduler_are_409(tmp_path: Path) -> None:
    """Submit, list, query, approve and reject answer 409 NoSchedulerError when none runs."""
    async with serve_api(tmp_path) as api:
        answers = [
            await api.call("POST", "/scenarios", {"scenario": "leave_application"}),
            await api.call("GET", "/scenarios"),
            await api.call("GET", "/scenarios/leave_application"),
            await api.call("POST", "/scenarios/leave_application/approve"),
            await api.call("POST", "/scenarios/leave_application/reject", {"reason": "no"}),
        ]
    assert [(409, "NoSchedulerError")] * 5 == [(s, error_of(b)[0]) for s, b in answers]
    assert "no 'scheduler' actor is running" in error_of(answers[0][1])[1]


async def test_scenarios_go_through_the_scheduler(tmp_path: Path) -> None:
    """Submit, query, approve and reject reach the scheduler and return its ScenarioState."""
    async with serve_api(tmp_path, scheduler=True) as api:
        submitted = await api.call("POST", "/scenarios", {"scenario": "leave", "requirement": "r"})
        status = await api.call("GET", "/status")
        listed = await api.call("GET", "/scenarios")
        approved = await api.call("POST", "/scenarios/leave/approve")
        rejected = await api.call("POST", "/scenarios/leave/reject", {"reason": "too vague"})
        one = await api.call("GET", "/scenarios/leave")
        missing = await api.call("GET", "/scenarios/other")
        refused = await api.call("POST", "/scenarios/other/approve")
    assert (200, "awaiting_approval", True) == (
        submitted[0],
        submitted[1]["phase"],
        submitted[1]["started"],
    )
    assert ["leave"] == [s["scenario"] for s in status[1]["pending_approvals"]]
    assert (200, ["leave"]) == (listed[0], [s["scenario"] for s in listed[1]])
    assert (200, "executing") == (approved[0], approved[1]["phase"])
    assert (200, "designing", "too vague") == (
        rejected[0],
        rejected[1]["phase"],
        rejected[1]["reason"],
    )
    assert (200, "designing") == (one[0], one[1]["phase"])
    assert (404, "UnknownScenarioError") == (missing[0], error_of(missing[1])[0])
    assert (400, "UsageError") == (refused[0], error_of(refused[1])[0])
    assert "no scenario 'other'; submit it first" in error_of(refused[1])[1]


async def test_an_invalid_scenario_name_is_422(tmp_path: Path) -> None:
    """A submitted scenario name with a path separator answers 422 before the scheduler."""
    async with serve_api(tmp_path, scheduler=True) as api:
        status, body = await api.call("POST", "/scenarios", {"scenario": "../etc"})
    assert (422, "ControlRequestError", {}) == (status, error_of(body)[0], api.scenarios)


async def test_stop_calls_the_owners_stop_handler(tmp_path: Path) -> None:
    """POST /stop answers 202 and calls `on_stop` once."""
    async with serve_api(tmp_path) as api:
        status, body = await api.call("POST", "/stop")
        stops = list(api.stops)
    assert (202, {"stopping": True}, [True]) == (status, body, stops)


async def test_unknown_endpoints_and_methods_get_the_error_body(tmp_path: Path) -> None:
    """A wrong path answers 404 and a wrong method 405, both in the error envelope."""
    async with serve_api(tmp_path) as api:
        missing = await api.call("GET", "/nope")
        wrong = await api.call("GET", "/stop")
    assert (404, "ControlRequestError") == (missing[0], error_of(missing[1])[0])
    assert (405, "ControlRequestError") == (wrong[0], error_of(wrong[1])[0])
    assert "see /openapi.json" in error_of(missing[1])[1]


async def test_the_openapi_schema_lists_every_endpoint(tmp_path: Path) -> None:
    """GET /openapi.json serves a schema with all control endpoints."""
    async with serve_api(tmp_path) as api:
        status, schema = await api.call("GET", "/openapi.json")
    assert 200 == status
    assert {
        "/health", "/status", "/actors/{name}/tell", "/actors/{name}/ask", "/scenarios",
        "/scenarios/{name}", "/scenarios/{name}/approve", "/scenarios/{name}/reject", "/stop",
        "/tokens",
    } == set(schema["paths"])  # fmt: skip


async def test_tokens_sends_the_log_file_filtered(tmp_path: Path) -> None:
    """GET /tokens sends the file's records as NDJSON, filtered by actor and event family."""
    async with serve_api(tmp_path) as api:
        async with api.runtime.token_log.follow() as written:
            api.runtime.token_log.emit(
                "actor.restarted", actor="a", restarts=1, backoff_ms=0, reason="x"
            )
            api.runtime.token_log.emit(
                "message.dead_lettered",
                actor="b",
                message_id="m",
                message_type="T",
                attempt=1,
                reason="y",
            )
            with anyio.fail_after(5):
                for _ in range(2):
                    await written.receive()  # followers hear of a record once it is on disk
        every = await api.http.get("/tokens")
        only_b = await api.http.get("/tokens", params={"actor": "b"})
        only_actor = await api.http.get("/tokens", params={"event": "actor"})
    records = [json.loads(line) for line in every.text.splitlines()]
    assert (200, "application/x-ndjson") == (every.status_code, every.headers["content-type"])
    assert ["actor.restarted", "message.dead_lettered"] == [r["event"] for r in records]
    assert ["b"] == [json.loads(line)["actor"] for line in only_b.text.splitlines()]
    assert ["actor.restarted"] == [
        json.loads(line)["event"] for line in only_actor.text.splitlines()
    ]


async def test_an_unexpected_exception_is_a_logged_500_not_a_crash() -> None:
    """An exception escaping the app becomes a 500 error body; the server goes on."""

    async def broken(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("bug")

    transport = httpx2.ASGITransport(app=_CatchAll(broken))
    async with httpx2.AsyncClient(transport=transport, base_url="http://x") as http:
        response = await http.get("/")
    assert (500, "InternalError") == (response.status_code, error_of(response.json())[0])


# --- bad input ----------------------------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
# Lone surrogates included: JSON can escape them, UTF-8 cannot carry them back out.
_texts = st.text(st.characters(exclude_categories=()), max_size=8)
_types = st.one_of(st.just("Hello"), st.sampled_from(["Boom", "Wait", "Nope", ""]), _texts, _json)
_payloads = st.one_of(
    st.fixed_dictionaries({"name": _texts}),
    st.fixed_dictionaries({}, optional={"name": _texts | _json, "x": _json}),
    _json,
)
_message_bodies = st.fixed_dictionaries(
    {"type": _types, "payload": _payloads},
    # A valid but tiny timeout would rightly time out (504): keep valid ones generous.
    optional={"timeout": st.floats(min_value=1, max_value=3600)},
) | st.fixed_dictionaries(
    {},
    optional={
        "type": _types,
        "payload": _payloads,
        "timeout": st.floats(max_value=0) | st.floats(min_value=1e4) | _json,
        "extra": _json,
    },
)
_paths = (
    st.sampled_from(["/actors/greeter/tell", "/actors/greeter/ask"])
    | st.sampled_from(
        [
            "/actors/nobody/ask",
            "/actors/greeter/nope",
            "/scenarios",
            "/scenarios/x/reject",
            "/scenarios/%2e%2e/approve",
            "/stop/now",
        ]
    )
    | _texts.map(lambda name: f"/actors/{quote(name, safe='', errors='surrogatepass')}/ask")
)
_bodies = st.one_of(
    _message_bodies.map(lambda b: json.dumps(b).encode()),
    _message_bodies.map(lambda b: json.dumps(b).encode()),
    _message_bodies.map(lambda b: json.dumps(b).encode()),
    _json.map(lambda b: json.dumps(b).encode()),
    st.binary(max_size=40),
)


_content_types = st.sampled_from(["application/json"] * 4 + ["text/plain", None])


def test_no_bad_body_gets_a_5xx_and_the_runtime_keeps_answering(tmp_path: Path) -> None:
    """Arbitrary bodies to tell/ask/scenario endpoints get 4xx, never 5xx; then all still works."""
    with (
        start_blocking_portal(backend="asyncio") as portal,
        portal.wrap_async_context_manager(serve_api(tmp_path)) as api,
    ):

        async def post(path: str, body: bytes, kind: str | None) -> tuple[int, Any]:
            headers = {"content-type": kind} if kind else {}
            response = await api.http.post(path, content=body, headers=headers)
            return response.status_code, response.json()

        @settings(
            max_examples=300,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        )
        @given(path=_paths, body=_bodies, kind=_content_types)
        def check(path: str, body: bytes, kind: str | None) -> None:
            status, answer = portal.call(post, path, body, kind)
            assert status < 500, (status, answer)
            assert {"type", "message", "details"} <= set(answer.get("error", {})) or status < 300

        check()
        health = portal.call(api.call, "GET", "/health")
        asked = portal.call(
            api.call, "POST", "/actors/greeter/ask", {"type": "Hello", "payload": {"name": "z"}}
        )
    assert (200, (200, {"text": "hi z"})) == (health[0], (asked[0], asked[1]["reply"]))
