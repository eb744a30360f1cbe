"""Control API: every endpoint, its status codes and error bodies, its OpenAPI document, what
a request may be (size, depth, types), bad input; and, over a real socket, requests that do
not arrive in time."""

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

from baton.pipeline.scenario_state import ScenarioState
from baton.runtime import ContextFill, Runtime
from baton.runtime.settings import KernelConfig, ServerConfig
from baton.server import ControlServer, create_control_app
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
async def serve_api(
    workspace: Path | None, *, scheduler: bool = False, **limits: Any
) -> AsyncIterator[Api]:
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
        app = create_control_app(runtime, on_stop=lambda: stops.append(True), **limits)
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


async def test_a_type_the_actor_does_not_take_is_422(tmp_path: Path) -> None:
    """An unknown message type answers 422 InvalidMessageError naming the accepted types."""
    async with serve_api(tmp_path) as api:
        status, body = await api.call("POST", "/actors/greeter/tell", {"type": "Nope"})
    assert (422, "InvalidMessageError") == (status, error_of(body)[0])
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
        not_json = await api.http.post(
            "/actors/greeter/tell", content=b"{nope", headers={"content-type": "application/json"}
        )
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
        await api.call("POST", "/scenarios", {"scenario": "other"})
        status = await api.call("GET", "/status")
        listed = await api.call("GET", "/scenarios")
        approved = await api.call("POST", "/scenarios/leave/approve")
        rejected = await api.call("POST", "/scenarios/other/reject", {"reason": "too vague"})
        one = await api.call("GET", "/scenarios/other")
    assert (200, "awaiting_approval", True) == (
        submitted[0],
        submitted[1]["phase"],
        submitted[1]["started"],
    )
    assert ["leave", "other"] == [s["scenario"] for s in status[1]["pending_approvals"]]
    assert (200, ["leave", "other"]) == (listed[0], [s["scenario"] for s in listed[1]])
    assert (200, "executing") == (approved[0], approved[1]["phase"])
    assert (200, "designing", "too vague") == (
        rejected[0],
        rejected[1]["phase"],
        rejected[1]["reason"],
    )
    assert (200, "designing") == (one[0], one[1]["phase"])


async def test_an_unknown_scenario_is_404_and_nothing_to_decide_is_409(tmp_path: Path) -> None:
    """Query, approve or reject of an unknown scenario answer 404, a decision with nothing
    pending 409; the scheduler answers them, so nothing is dead-lettered."""
    async with serve_api(tmp_path, scheduler=True) as api:
        await api.call("POST", "/scenarios", {"scenario": "leave"})
        await api.call("POST", "/scenarios/leave/approve")
        unknown = [
            await api.call("GET", "/scenarios/nope"),
            await api.call("POST", "/scenarios/nope/approve"),
            await api.call("POST", "/scenarios/nope/reject", {"reason": "no"}),
        ]
        undecidable = [
            await api.call("POST", "/scenarios/leave/approve"),
            await api.call("POST", "/scenarios/leave/reject", {"reason": "no"}),
        ]
        dead_letters = api.runtime.dead_letters.total
    assert [(404, "UnknownScenarioError")] * 3 == [(s, error_of(b)[0]) for s, b in unknown]
    assert [(409, "NoPendingHandoffError")] * 2 == [(s, error_of(b)[0]) for s, b in undecidable]
    assert (
        "scenario 'leave' has no handoff awaiting approval (it is executing) — decide it once "
        "`baton status` lists it under pending approvals"
    ) == error_of(undecidable[0][1])[1]
    assert 0 == dead_letters


async def test_an_invalid_scenario_name_in_a_path_is_422(tmp_path: Path) -> None:
    """A scenario name in a path that breaks the naming rule answers 422, as documented."""
    async with serve_api(tmp_path, scheduler=True) as api:
        answers = [
            await api.call("GET", "/scenarios/_x"),
            await api.call("POST", "/scenarios/..x/approve"),
        ]
    assert [422, 422] == [status for status, _ in answers]
    assert "path parameter `name`" in error_of(answers[0][1])[1]


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


async def test_a_405_lists_every_method_the_path_takes(tmp_path: Path) -> None:
    """A method a path does not take answers 405 with `Allow` naming all the ones it does,
    across the routes that share the path."""
    async with serve_api(tmp_path) as api:
        answers = {
            path: await api.http.request("TRACE", path)
            for path in ("/status", "/scenarios", "/actors/greeter/ask", "/scenarios/x/reject")
        }
    assert {
        "/status": (405, "GET"),
        "/scenarios": (405, "GET, POST"),
        "/actors/greeter/ask": (405, "POST"),
        "/scenarios/x/reject": (405, "POST"),
    } == {path: (r.status_code, r.headers.get("allow")) for path, r in answers.items()}
    assert "it takes GET, POST" in error_of(answers["/scenarios"].json())[1]


async def test_the_openapi_schema_lists_every_endpoint(tmp_path: Path) -> None:
    """GET /openapi.json serves a schema with all control endpoints, tell and ask per actor."""
    async with serve_api(tmp_path) as api:
        status, schema = await api.call("GET", "/openapi.json")
    assert 200 == status
    assert {
        "/health",
        "/status",
        "/scenarios",
        "/scenarios/{name}",
        "/scenarios/{name}/approve",
        "/scenarios/{name}/reject",
        "/stop",
        "/tokens",
        "/dead-letters",
        "/memory",
        "/memory/search",
        "/memory/{entry_id}",
        "/actors/failing/tell",
        "/actors/failing/ask",
        "/actors/greeter/tell",
        "/actors/greeter/ask",
        "/actors/stuck/tell",
        "/actors/stuck/ask",
    } == set(schema["paths"])  # fmt: skip (`reporter` handles no message: no tell, no ask)


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


# --- the OpenAPI document ----------------------------------------------------------------


def operations(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        f"{method.upper()} {path}": operation
        for path, item in document["paths"].items()
        for method, operation in item.items()
    }


async def test_the_document_lists_the_message_types_each_actor_takes(tmp_path: Path) -> None:
    """Each actor's tell and ask take a `oneOf` over its message types, discriminated by
    `type`, each with the payload schema of its pydantic model."""
    async with serve_api(tmp_path, scheduler=True) as api:
        _, document = await api.call("GET", "/openapi.json")
    schemas = document["components"]["schemas"]
    greeter = operations(document)["POST /actors/greeter/ask"]["requestBody"]
    scheduler = operations(document)["POST /actors/scheduler/tell"]["requestBody"]
    assert {"$ref": "#/components/schemas/HelloMessage"} == greeter["content"]["application/json"][
        "schema"
    ]
    assert (
        {"const": "Hello"},
        {"$ref": "#/components/schemas/Hello"},
        ["type", "payload"],
        False,
    ) == (
        {"const": schemas["HelloMessage"]["properties"]["type"]["const"]},
        {"$ref": schemas["HelloMessage"]["properties"]["payload"]["$ref"]},
        schemas["HelloMessage"]["required"],
        schemas["HelloMessage"]["additionalProperties"],
    )
    assert ["name"] == schemas["Hello"]["required"]
    union = scheduler["content"]["application/json"]["schema"]
    assert ("type", ["Approve", "Reject", "ScenarioQuery", "StartScenario"]) == (
        union["discriminator"]["propertyName"],
        sorted(union["discriminator"]["mapping"]),
    )
    # No field of a ScenarioQuery is required: its payload may be left out.
    assert ["type"] == schemas["ScenarioQueryMessage"]["required"]


async def test_actors_spawned_after_the_app_are_in_the_document(tmp_path: Path) -> None:
    """The document describes the actors running when it is asked for, as `--actor` adds."""
    async with serve_api(tmp_path) as api:
        await api.runtime.spawn("late", Greeter)
        _, document = await api.call("GET", "/openapi.json")
    assert {"/actors/late/tell", "/actors/late/ask"} <= set(document["paths"])


async def test_every_error_answer_is_documented_with_the_error_body(tmp_path: Path) -> None:
    """Every operation documents the 4xx and 5xx it can answer, each as the error body."""
    async with serve_api(tmp_path, scheduler=True) as api:
        _, document = await api.call("GET", "/openapi.json")
    errors = {
        name: {
            status: response["content"]["application/json"]["schema"]["$ref"]
            for status, response in operation["responses"].items()
            if int(status) >= 400
        }
        for name, operation in operations(document).items()
    }
    body = "#/components/schemas/ErrorBody"
    assert {body} == {ref for statuses in errors.values() for ref in statuses.values()}
    assert {"408", "413", "415", "422", "500"} <= set.intersection(
        *(set(statuses) for statuses in errors.values())
    )
    assert {"400", "404", "409", "502", "504"} <= set(errors["POST /actors/greeter/ask"])
    assert {"404", "409", "503"} <= set(errors["POST /actors/greeter/tell"])
    assert {"404", "409"} <= set(errors["POST /scenarios/{name}/approve"])


async def test_tokens_is_documented_as_an_ndjson_stream(tmp_path: Path) -> None:
    """`GET /tokens` answers NDJSON, one token-log record per line, the stream endless with
    `follow=true`."""
    async with serve_api(tmp_path) as api:
        _, document = await api.call("GET", "/openapi.json")
    ok = operations(document)["GET /tokens"]["responses"]["200"]
    assert {
        "application/x-ndjson": {"itemSchema": {"$ref": "#/components/schemas/TokenRecord"}}
    } == ok["content"]
    assert "never ends by itself" in ok["description"]
    record = document["components"]["schemas"]["TokenRecord"]
    assert "event" == record["discriminator"]["propertyName"]


# --- what a request may be -------------------------------------------------------------


JSON = {"content-type": "application/json"}


async def test_a_body_over_the_limit_is_413(tmp_path: Path) -> None:
    """A body over `max_body_bytes` answers 413, by its `Content-Length` or, sent in chunks,
    once that much has arrived."""

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(4):
            yield b" " * 1000

    async with serve_api(tmp_path, max_body_bytes=2048) as api:
        declared = await api.http.post("/actors/greeter/tell", content=b" " * 3000)
        chunked = await api.http.post("/actors/greeter/tell", content=chunks())
        within = await api.call(
            "POST", "/actors/greeter/ask", {"type": "Hello", "payload": {"name": "a" * 1900}}
        )
    assert [413, 413, 200] == [declared.status_code, chunked.status_code, within[0]]
    assert (
        "the request body is larger than 2,048 bytes — send less, or raise "
        "`[server] max_body_bytes` in baton.toml"
    ) == error_of(declared.json())[1]


async def test_the_body_limit_comes_from_baton_toml(tmp_path: Path) -> None:
    """`[server] max_body_bytes` in baton.toml sets the limit (8 MB by default)."""
    (tmp_path / "baton.toml").write_text("[server]\nmax_body_bytes = 4096\n")
    async with serve_api(tmp_path) as api:
        refused = await api.http.post("/actors/greeter/tell", content=b" " * 5000)
    assert (413, 4096) == (refused.status_code, api.runtime.config.server.max_body_bytes)
    assert 8 * 1024 * 1024 == ServerConfig().max_body_bytes


async def test_a_body_that_is_not_json_is_415(tmp_path: Path) -> None:
    """A body sent as anything but JSON, or with no `Content-Type`, answers 415 saying to
    send JSON."""
    async with serve_api(tmp_path) as api:
        form = await api.http.post(
            "/actors/greeter/tell",
            content=b"type=Hello",
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        untyped = await api.http.post("/actors/greeter/tell", content=b'{"type": "Hello"}')
    assert [(415, "ControlRequestError")] * 2 == [
        (form.status_code, error_of(form.json())[0]),
        (untyped.status_code, error_of(untyped.json())[0]),
    ]
    assert (
        "the body is sent as 'application/x-www-form-urlencoded'; every body this API takes "
        "is JSON — send it with `Content-Type: application/json`"
    ) == error_of(form.json())[1]


async def test_json_nested_too_deep_is_422_saying_so(tmp_path: Path) -> None:
    """JSON nested past 100 levels answers 422 saying so, before it is parsed (1,000 levels
    once answered "There was an error parsing the body", 500 levels a 500)."""
    answers = []
    async with serve_api(tmp_path) as api:
        for depth in (500, 1000, 100_000):
            name = "[" * depth + "]" * depth
            body = f'{{"type": "Hello", "payload": {{"name": {name}}}}}'.encode()
            answers.append(await api.http.post("/actors/greeter/ask", content=body, headers=JSON))
        shallow = await api.http.post(
            "/actors/greeter/ask",
            content=b'{"type": "Hello", "payload": {"name": "[[["}}',
            headers=JSON,
        )
    assert [422, 422, 422] == [answer.status_code for answer in answers]
    assert (
        "the JSON body is nested 1002 levels deep; at most 100 are accepted — flatten it"
    ) == error_of(answers[1].json())[1]
    assert (200, {"text": "hi [[["}) == (shallow.status_code, shallow.json()["reply"])


async def test_a_body_that_is_not_utf8_is_422(tmp_path: Path) -> None:
    """A body that is not UTF-8 answers 422 naming the byte, not a parser's 400."""
    async with serve_api(tmp_path) as api:
        response = await api.http.post(
            "/actors/greeter/tell", content=b'{"type": "\xff"}', headers=JSON
        )
    assert (422, "ControlRequestError") == (response.status_code, error_of(response.json())[0])
    assert "not UTF-8 text (byte 0xff at offset 10)" in error_of(response.json())[1]


async def test_a_bad_query_parameter_is_named_as_one(tmp_path: Path) -> None:
    """`follow=maybe` answers 422 saying the query parameter must be true or false."""
    async with serve_api(tmp_path) as api:
        status, body = await api.call("GET", "/tokens?follow=maybe")
    assert (
        422,
        "invalid request to GET /tokens: query parameter `follow` must be true or false (got "
        "'maybe') — see /openapi.json for its parameters",
    ) == (status, error_of(body)[1])


async def test_bodies_take_json_types_as_they_are(tmp_path: Path) -> None:
    """`0` is not a boolean nor `"1"` a number, in a payload or a body, as the document says."""
    async with serve_api(tmp_path, scheduler=True) as api:
        answers = [
            await api.call(
                "POST",
                "/actors/scheduler/ask",
                {"type": "StartScenario", "payload": {"scenario": "x", "auto_approve": 0}},
            ),
            await api.call("POST", "/scenarios", {"scenario": "x", "auto_approve": 0}),
            await api.call(
                "POST", "/actors/greeter/ask", {"type": "Hello", "payload": {}, "timeout": "1"}
            ),
        ]
    assert [422, 422, 422] == [status for status, _ in answers]
    assert "auto_approve: Input should be a valid boolean" in error_of(answers[0][1])[1]


async def test_a_timeout_under_the_floor_is_422(tmp_path: Path) -> None:
    """A `timeout` under 0.05 s, which could only ever time out, answers 422."""
    async with serve_api(tmp_path) as api:
        status, body = await api.call(
            "POST",
            "/actors/greeter/ask",
            {"type": "Hello", "payload": {"name": "a"}, "timeout": 0.01},
        )
    assert 422 == status
    assert "body.timeout: Input should be greater than or equal to 0.05" in error_of(body)[1]


# --- over the socket: requests that do not arrive ---------------------------------------


@asynccontextmanager
async def control_socket(workspace: Path, request_timeout: float) -> AsyncIterator[Path]:
    """A `ControlServer` whose requests must arrive within `request_timeout` seconds."""
    config = KernelConfig(server=ServerConfig(request_timeout=request_timeout))
    async with (
        Runtime.open(workspace, config=config) as runtime,
        ControlServer.open(runtime) as server,
    ):
        yield server.socket_path


async def exchange(socket_path: Path, *parts: bytes, closes: bool = True) -> list[bytes]:
    """Send each part and read what comes back: up to the end of a response's head, and
    after the last part, if it `closes`, until the server closes the connection."""
    answers: list[bytes] = []
    async with await anyio.connect_unix(socket_path) as stream:
        for index, part in enumerate(parts):
            await stream.send(part)
            to_close = closes and index == len(parts) - 1
            received = b""
            with anyio.fail_after(5):
                try:
                    while to_close or b"\r\n\r\n" not in received:
                        received += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    pass
            answers.append(received)
    return answers


async def test_a_request_whose_headers_stall_gets_408_and_is_closed(tmp_path: Path) -> None:
    """Headers that do not arrive within `request_timeout` get a 408 and the connection
    closes, on a new connection and on a kept-alive one after a first request."""
    async with control_socket(tmp_path, 0.2) as path:
        (fresh,) = await exchange(path, b"GET /health HTTP/1.1\r\nHost: baton\r\n")
        first, second = await exchange(
            path,
            b"GET /health HTTP/1.1\r\nHost: baton\r\n\r\n",
            b"GET /health HTTP/1.1\r\nHost: ba",
        )
    assert b"HTTP/1.1 408 Request Timeout\r\n" == fresh[: fresh.index(b"\n") + 1]
    assert b"the request headers did not arrive within 0.2s" in fresh
    assert first.startswith(b"HTTP/1.1 200 OK")
    # The first response's body may come in with the second read: look past it.
    assert b"HTTP/1.1 408 Request Timeout\r\n" in second


async def test_a_request_whose_body_stalls_gets_408(tmp_path: Path) -> None:
    """A body that does not all arrive within `request_timeout` of its headers gets a 408."""
    head = (
        b"POST /actors/x/tell HTTP/1.1\r\nHost: baton\r\n"
        b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    )
    async with control_socket(tmp_path, 0.2) as path:
        (answer,) = await exchange(path, head + b'{"type": ')
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout")
    assert b"the request body did not arrive within 0.2s of its headers" in answer


async def test_a_declared_body_over_the_limit_is_refused_before_it_is_sent(tmp_path: Path) -> None:
    """A `Content-Length` over `[server] max_body_bytes` gets 413 without the body sent."""
    head = (
        b"POST /actors/x/tell HTTP/1.1\r\nHost: baton\r\n"
        b"Content-Type: application/json\r\nContent-Length: 100000000\r\n\r\n"
    )
    async with control_socket(tmp_path, 5) as path:
        (answer,) = await exchange(path, head, closes=False)
    assert b"413" == answer.split(b" ")[1]


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
