"""The control API against its own OpenAPI document, tested by schemathesis in process.

The app is what `baton run --actor greeter=...` serves: the pipeline's scheduler, init and
execute on the offline model, plus a user's actor, with the control API over them. Every
request schemathesis builds from `/openapi.json` (examples, coverage of each schema's edges,
fuzzing; a fixed seed) must be answered as the document says: no 5xx, a documented status
and body, schema-valid requests accepted, schema-invalid ones refused, 405 with `Allow`.
`POST /stop` is left out: it would stop the runtime under test.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import schemathesis
from control_actors import Greeter
from schemathesis import engine
from schemathesis.engine import Status
from schemathesis.engine.events import FatalError, NonFatalError, ScenarioFinished
from schemathesis.python.asgi import shutdown_lifespans
from starlette.types import ASGIApp, Receive, Scope, Send

from baton.pipeline.config import load_config
from baton.pipeline.host import open_pipeline
from baton.runtime import Runtime
from baton.server import create_control_app
from baton.server._openapi import message_types
from baton.server._pipeline_api import PIPELINE_PROTOCOL

SEED = 21
CONFIG = schemathesis.Config.from_dict(
    {
        "seed": SEED,
        # Nothing written into the repository: no run cache, no example database.
        "cache": {"enabled": False},
        # 50 cases per operation besides the coverage phase's: ~20 s.
        "generation": {"max-examples": 50, "database": "none"},
        # 504 is the documented answer to an ask its actor did not answer within its
        # `timeout`; at the 0.05 s the coverage phase picks, a model round sometimes takes
        # longer. Any other 5xx is a failure.
        "checks": {"not_a_server_error": {"expected-statuses": ["2xx", "3xx", "4xx", "504"]}},
    }
)


class InProcessRun:
    """An ASGI app whose lifespan runs the runtime, as `baton run` would, and whose requests
    go to the control API over it (schemathesis runs the lifespan on its own event loop, so
    the runtime lives where the requests are served)."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.api: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        assert self.api is not None, "the lifespan starts before any request"
        await self.api(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        config = load_config(
            self.workspace, environ={}, overrides={"runtime": {"mailbox": "memory"}}
        )
        async with (
            Runtime.open(self.workspace, config=config) as runtime,
            open_pipeline(runtime, environ={}),
        ):
            await runtime.spawn("greeter", Greeter)
            # schemathesis reads a response to its end unless it is an event stream, and
            # `GET /tokens?follow=true` never ends by itself: a closing server ends follow
            # streams at once, as `baton run` does when it stops.
            closing = anyio.Event()
            closing.set()
            self.api = create_control_app(runtime, on_stop=lambda: None, closing=closing)
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
        await send({"type": "lifespan.shutdown.complete"})


def problems(events: Iterable[Any]) -> list[str]:
    """Each failed check (with the request that shows it) and each error of a run."""
    found: list[str] = []
    for event in events:
        if isinstance(event, ScenarioFinished):
            for checks in event.recorder.checks.values():
                found.extend(
                    f"{event.label}: {check.failure_info.failure.title}\n"
                    f"{check.failure_info.code_sample}"
                    for check in checks
                    if check.status is Status.FAILURE and check.failure_info is not None
                )
        elif isinstance(event, NonFatalError):
            found.append(f"{event.label}: {event.value!r}")
        elif isinstance(event, FatalError):
            found.append(f"schemathesis: {event.exception!r}")
    return found


def test_schemathesis_finds_no_failure(tmp_path: Path) -> None:
    """schemathesis, run as `schemathesis run --exclude-path /stop` would, finds nothing."""
    app = InProcessRun(tmp_path)
    try:
        schema = schemathesis.openapi.from_asgi("/openapi.json", app, config=CONFIG)
        found = problems(engine.from_schema(schema.exclude(path="/stop")).execute())
    finally:
        shutdown_lifespans()
    assert [] == found


def message_names(body: dict[str, Any]) -> list[str]:
    """The message types a documented tell or ask body takes."""
    schema = body["content"]["application/json"]["schema"]
    if "discriminator" in schema:
        return sorted(schema["discriminator"]["mapping"])
    return [schema["$ref"].rsplit("/", 1)[-1].removesuffix("Message")]


async def test_the_pipeline_documents_what_a_person_sends(tmp_path: Path) -> None:
    """The pipeline's actors are documented with the messages a person sends them; their own
    work orders and reports (`PIPELINE_PROTOCOL`) are taken but left out of the document."""
    config = load_config(tmp_path, environ={}, overrides={"runtime": {"mailbox": "memory"}})
    async with (
        Runtime.open(tmp_path, config=config) as runtime,
        open_pipeline(runtime, environ={}),
    ):
        app = create_control_app(runtime, on_stop=lambda: None)
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://baton") as http:
            document = (await http.get("/openapi.json")).json()
        handled = {
            name: {t.__name__ for t in message_types(actor_type)}
            for name, actor_type in runtime.actor_types().items()
        }
    documented = {
        path: message_names(item["post"]["requestBody"])
        for path, item in document["paths"].items()
        if path.startswith("/actors/") and path.endswith("/tell")
    }
    assert {
        "/actors/init/tell": ["Prompt"],
        "/actors/execute/tell": ["Prompt"],
        "/actors/scheduler/tell": ["Approve", "Reject", "ScenarioQuery", "StartScenario"],
    } == documented
    protocol = {t.__name__ for t in PIPELINE_PROTOCOL}
    assert {name: set() for name in handled} == {
        name: types - protocol - set(documented[f"/actors/{name}/tell"])
        for name, types in handled.items()
    }
