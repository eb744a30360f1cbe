"""`baton tell` and `baton ask`: one message to an actor of the running runtime (README.md,
"Running baton").

They are the commands a script runs by the hundred, so they go through the command line's
own wire (`_wire.py`, the standard library alone) instead of the async client, and load no
anyio, pydantic, httpx2 or error tree (docs/architecture.md, "What a command imports"): what
they print, and their exit codes, are the same.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from baton.server._control_requests import (
    ask_wait,
    message_body,
    not_unicode,
    not_unicode_message,
    tell_wait,
)
from baton.server._wire import ControlWire, WireError

DEFAULT_ASK_SECONDS = 60.0
"""`baton ask --timeout`'s default."""


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive number of seconds")
    return value


def message_commands(
    commands: argparse._SubParsersAction[Any], common: argparse.ArgumentParser
) -> None:
    """`baton tell` and `baton ask` (each takes `common`'s options, `--workspace`), added to
    the CLI's `commands`; each stores its function in `light_command`."""
    for name, handler, help_text in (
        ("tell", tell, "send a message to an actor"),
        ("ask", ask, "send a message to an actor and print its reply as JSON"),
    ):
        sub: argparse.ArgumentParser = commands.add_parser(
            name, parents=[common], help=help_text, description=help_text
        )
        sub.set_defaults(light_command=handler)
        sub.add_argument("actor", metavar="ACTOR")
        sub.add_argument("type", metavar="TYPE", help="the message class name, e.g. Prompt")
        sub.add_argument("json", metavar="JSON", help="the message fields as a JSON object")
        if name == "ask":
            sub.add_argument(
                "--timeout",
                type=_positive,
                default=DEFAULT_ASK_SECONDS,
                metavar="S",
                help="default 60",
            )


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON can carry")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is too large a number for JSON")
    return value


def payload(args: argparse.Namespace) -> dict[str, Any]:
    """The message fields of the command line (`args.json`), checked before the runtime is
    reached: a JSON object that a request can carry, or a `WireError` to fix it (exit 2)."""
    try:
        # NaN and infinities are refused here: Python reads them, but no request carries one.
        fields = json.loads(args.json, parse_constant=_no_constant, parse_float=_finite)
    except ValueError as exc:  # a JSONDecodeError, or one of the above
        raise WireError(
            f"the {args.type} payload is not valid JSON ({exc}) — pass an object, "
            """e.g. '{"text": "hi"}'""",
            usage=True,
        ) from None
    if not isinstance(fields, dict):
        raise WireError(
            f"the {args.type} payload must be a JSON object of its fields, not "
            f'{type(fields).__name__} — e.g. \'{{"text": "hi"}}\'',
            usage=True,
        )
    where = not_unicode(fields)
    if where is not None:
        raise WireError(not_unicode_message(args.type, where), usage=True)
    return fields


def _print(text: str) -> None:
    print(text, flush=True)  # noqa: T201 - the CLI's output


def tell(args: argparse.Namespace) -> None:
    """`baton tell ACTOR TYPE JSON`: queue the message, say so."""
    body = message_body(args.type, payload(args), None)
    with ControlWire(args.workspace) as wire:
        wait = tell_wait(None, wire.timeout)
        wire.request("POST", f"/actors/{args.actor}/tell", body, timeout=wait)
    _print(f"queued {args.type} for {args.actor}")


def ask(args: argparse.Namespace) -> None:
    """`baton ask ACTOR TYPE JSON [--timeout S]`: print the reply as JSON."""
    body = message_body(args.type, payload(args), args.timeout)
    with ControlWire(args.workspace) as wire:
        answer = wire.request(
            "POST", f"/actors/{args.actor}/ask", body, timeout=ask_wait(args.timeout)
        )
    if not isinstance(answer, dict) or "reply" not in answer:
        raise WireError(f"the runtime answered the ask without a reply: {answer!r:.300}")
    _print(json.dumps(answer["reply"], ensure_ascii=False))
