"""The command line's own wire sends what the async client sends for the same tell or ask,
and exits 2 for exactly the errors the CLI gives exit 2 for."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from baton import errors
from baton.pipeline.errors import CommandLineError
from baton.server._control_requests import message_body
from baton.server._wire import COMMAND_LINE_ERRORS, _json_bytes, _target

# Names the runtime takes (1-128 letters, digits, `_ - . :`, a letter or digit first).
ACTOR_NAMES = ["greeter", "a", "Init-2", "worker.7", "scheduler:main", "x_y", "9" * 128]


@pytest.mark.parametrize("name", ACTOR_NAMES)
def test_a_valid_actor_names_request_target_is_the_clients(name: str) -> None:
    """`/actors/NAME/tell` goes out as httpx2 (the async client) sends it."""
    path = f"/actors/{name}/tell"
    with httpx2.Client(base_url="http://baton") as client:
        expected = client.build_request("POST", path).url.raw_path.decode()
    assert expected == _target("POST", path)


BODIES: list[dict[str, Any]] = [
    message_body("Hello", {"name": "a"}, None),
    message_body("Hello", {"name": "\u00e9\u4e2d \U0001f600", "n": [1, 2.5, None, True]}, 60.0),
    message_body("Empty", {}, 0.25),
]


@pytest.mark.parametrize("body", BODIES)
def test_a_message_body_is_the_bytes_the_client_sends(body: dict[str, Any]) -> None:
    """A tell's or ask's JSON body is encoded byte for byte as httpx2 encodes `json=`."""
    with httpx2.Client(base_url="http://baton") as client:
        expected = client.build_request("POST", "/actors/a/ask", json=body).content
    assert expected == _json_bytes("POST", "/actors/a/ask", body)


def test_the_errors_the_cli_exits_2_for_are_the_command_line_errors() -> None:
    """`COMMAND_LINE_ERRORS` names `CommandLineError` and every subclass of it."""
    expected = {
        value.__name__
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, CommandLineError)
    }
    assert expected == COMMAND_LINE_ERRORS
