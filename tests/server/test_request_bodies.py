"""What a request body may be, judged before it is parsed and in time linear in its size: at
most 50,000 values and keys, nested at most 100 deep; a valid large body still gets through,
parsed off the event loop; a told message its own type refuses is never queued."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
from control_actors import Hello, quick_policy
from test_control_api import JSON, error_of, serve_api

from baton import Actor, Runtime, handler
from baton.pipeline.messages import Dispatch
from baton.server import create_control_app
from baton.server._json_shape import JsonShape, json_shape
from baton.server._request_limits import INLINE_CHECK_BYTES, MAX_JSON_VALUES


def test_the_shape_counts_values_keys_and_depth_outside_strings() -> None:
    """Values, object keys and nesting are counted as the parser sees them: brackets, commas
    and colons inside strings (escaped quotes and backslashes included) do not count."""
    text = rb'{"a": [1, {"b": "x\"]]],:"}, [], "\\"], "c": {}}'
    assert JsonShape(values=11, depth=3) == json_shape(text, max_values=100)
    assert JsonShape(values=1, depth=1) == json_shape(b" [ ] ", max_values=100)
    assert JsonShape(values=1, depth=0) == json_shape(b'"[[["', max_values=100)
    assert JsonShape(values=11, depth=None) == json_shape(text, max_values=10)


async def test_a_body_of_unclosed_escaped_quotes_is_answered_at_once(tmp_path: Path) -> None:
    """A megabyte of `\\"` that never closes a string (its check once took time growing with
    the square of its size: 66 s for 120 KB, with every actor frozen) is answered as the JSON
    it is not, and the runtime answers /health meanwhile."""
    body = b'{"type": "Hello", "payload": {"name": "' + b'\\"' * 500_000
    async with serve_api(tmp_path) as api:
        with anyio.fail_after(30):
            refused = await api.http.post("/actors/greeter/ask", content=body, headers=JSON)
            health = await api.http.get("/health")
    assert (422, 200) == (refused.status_code, health.status_code)
    assert error_of(refused.json())[1].startswith(
        "the body of POST /actors/greeter/ask is not valid JSON"
    )


async def test_more_values_than_the_limit_are_refused_before_parsing(tmp_path: Path) -> None:
    """A body of 60,000 numbers, or of an object with 30,000 keys, answers 422 saying how
    many values and keys it holds and what to send instead; 40,000 numbers get through."""
    many = "[" + ",".join(["0"] * 60_000) + "]"
    keys = "{" + ",".join(f'"k{i}": 0' for i in range(30_000)) + "}"
    fewer = "[" + ",".join(["0"] * 40_000) + "]"
    async with serve_api(tmp_path) as api:
        answers = [
            await api.http.post(
                "/actors/greeter/ask",
                content=f'{{"type": "Hello", "payload": {{"name": {value}}}}}'.encode(),
                headers=JSON,
            )
            for value in (many, keys, fewer)
        ]
    assert [422, 422, 422] == [answer.status_code for answer in answers]
    assert (
        f"the JSON body holds 60,007 values and keys; at most {MAX_JSON_VALUES:,} are accepted "
        "— put bulk data in a file in the workspace and send its path"
    ) == error_of(answers[0].json())[1]
    assert "holds 60,007 values and keys" in error_of(answers[1].json())[1]
    # Through the checks, the parser's: `name` is a string, not a list.
    assert "invalid payload for Hello" in error_of(answers[2].json())[1]


async def test_a_large_valid_body_is_parsed_and_answered(tmp_path: Path) -> None:
    """An ask and a submit whose bodies are well over the size parsed on the event loop (so
    parsed on a worker thread) are answered as small ones are."""
    name = "é" * INLINE_CHECK_BYTES
    async with serve_api(tmp_path, scheduler=True) as api:
        asked = await api.call(
            "POST", "/actors/greeter/ask", {"type": "Hello", "payload": {"name": name}}
        )
        submitted = await api.call("POST", "/scenarios", {"scenario": "big", "requirement": name})
    assert (200, {"text": f"hi {name}"}) == (asked[0], asked[1]["reply"])
    assert (200, name) == (submitted[0], submitted[1]["requirement"])


class WorkOrders(Actor):
    """Takes work orders, counting them."""

    def __init__(self, taken: list[Dispatch]) -> None:
        self.taken = taken

    @handler
    async def take(self, msg: Dispatch) -> None:
        self.taken.append(msg)

    @handler
    async def hello(self, msg: Hello) -> str:
        return msg.name


@asynccontextmanager
async def work_order_api(
    workspace: Path, taken: list[Dispatch]
) -> AsyncIterator[tuple[Runtime, httpx2.AsyncClient]]:
    async with Runtime.open(workspace, policy=quick_policy(), shutdown_timeout=1) as runtime:
        await runtime.spawn("init", WorkOrders, taken)
        app = create_control_app(runtime, on_stop=lambda: None)
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://baton") as http:
            yield runtime, http


async def test_a_told_message_its_type_refuses_is_422_and_never_queued(tmp_path: Path) -> None:
    """`baton tell init Dispatch` with `context_window = -5` answers 422 naming the field,
    as an ask would; nothing is queued, handled or dead-lettered."""
    taken: list[Dispatch] = []
    order = {
        "scenario": "zz",
        "agent_context": {"task_summary": "t"},
        "budget": {"context_window": -5},
    }
    async with work_order_api(tmp_path, taken) as (runtime, http):
        told = await http.post("/actors/init/tell", json={"type": "Dispatch", "payload": order})
        # A message told after it is handled first: had the bad one been queued, it would be
        # ahead of this one.
        asked = await http.post(
            "/actors/init/ask", json={"type": "Hello", "payload": {"name": "after"}}
        )
        dead = runtime.dead_letters.total
    assert (422, "InvalidPayloadError") == (told.status_code, error_of(told.json())[0])
    assert "budget.context_window: Input should be greater than 0" in error_of(told.json())[1]
    assert (200, "after") == (asked.status_code, asked.json()["reply"])
    assert ([], 0) == (taken, dead)
