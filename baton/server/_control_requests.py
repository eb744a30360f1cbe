"""What the async `Client` and the command line's own wire (`_wire.py`) both send to the
control API, and the words both use when a request cannot be sent or is not answered: with
the standard library alone, as `baton tell` and `baton ask` load nothing more
(docs/architecture.md, "What a command imports")."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

DEFAULT_TIMEOUT = 30.0
"""Seconds a client waits on the runtime for anything but an ask's reply."""

ASK_MARGIN = 10.0
"""Answers to asks arrive after the ask's own timeout; the HTTP wait must outlast it."""


def tell_wait(timeout: float | None, client_timeout: float) -> float:
    """How long a client waits for the answer to a tell that may wait `timeout` for room in
    the mailbox."""
    return (timeout or 0) + client_timeout


def ask_wait(timeout: float) -> float:
    """How long a client waits for the answer to an ask of `timeout`."""
    return timeout + ASK_MARGIN


def message_body(
    type_name: str, payload: Mapping[str, Any] | None, timeout: float | None
) -> dict[str, Any]:
    """The body of `POST /actors/{name}/tell` and `.../ask`."""
    body: dict[str, Any] = {"type": type_name, "payload": dict(payload or {})}
    if timeout is not None:
        body["timeout"] = timeout
    return body


def not_unicode(value: Any, where: str = "") -> str | None:
    """The dotted place in `value` (decoded JSON) of a string that is not valid Unicode (a
    lone surrogate such as `\\ud800`, which no UTF-8 request can carry), or None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where or "(whole payload)"
        return None
    if isinstance(value, Mapping):
        for key, item in value.items():
            place = f"{where}.{key}" if where else str(key)
            found = not_unicode(key, place) or not_unicode(item, place)
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = not_unicode(item, f"{where}[{index}]")
            if found is not None:
                return found
    return None


def not_unicode_message(type_name: str, where: str) -> str:
    """What to say of a payload that `not_unicode` found a lone surrogate in."""
    return (
        f"the {type_name} payload is not valid Unicode at {where!r}: it holds a lone "
        "surrogate (a \\ud800-\\udfff escape without its pair) — send the character itself "
        "or its full surrogate pair"
    )


def unsendable_message(method: str, path: str, text: str) -> str:
    """What to say of a request whose path or body holds `text`, lone surrogates."""
    return (
        f"cannot send {method} {path!r}: {text!r} is not valid Unicode (a lone surrogate) — "
        "send the character itself or its pair"
    )


def timeout_message(workspace: Path, cause: str) -> str:
    """What to say when the runtime in `workspace` did not answer in time (`cause`: how)."""
    return (
        f"the runtime in {workspace} did not answer in time ({cause}) — check it with "
        "`baton status`, or raise the client's timeout"
    )


def broken_message(workspace: Path, cause: str) -> str:
    """What to say when the connection to the runtime in `workspace` broke (`cause`: how)."""
    return (
        f"the connection to the runtime in {workspace} broke ({cause}) — check whether it "
        "still runs with `baton status`"
    )
