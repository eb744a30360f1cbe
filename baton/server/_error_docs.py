"""What each error status of the control API means, as its OpenAPI document says it."""

from __future__ import annotations

from typing import Any

from baton.runtime._error_wire import ErrorBody

STATUS_MEANING: dict[int, str] = {
    400: "the actor refused the message for a reason of its own (the message says which)",
    404: "no such actor, scenario, memory entry or endpoint",
    408: "the request's headers or body did not arrive within `[server] request_timeout`",
    409: "the current state refuses it: no scheduler, the actor stopped, nothing to approve, "
    "the scenario's record is damaged (the message names the file and what to do)",
    413: "the body is larger than `[server] max_body_bytes`",
    415: "the body is not JSON: send it with `Content-Type: application/json`",
    422: "the body or a query parameter is invalid (each problem is named), or its JSON is "
    "nested too deep or holds too many values",
    500: "a bug in the runtime, which keeps running: see its log",
    502: "the handler failed on every attempt (`details.cause` says how)",
    503: "the actor's mailbox stayed full for the whole `timeout`",
    504: "no reply within the ask's `timeout`",
    507: "no room to write: the disk or quota is full (`DiskFullFailure`: new work is refused "
    "until there is room; queued work is kept), or a file may not grow (`FileTooLargeFailure`: "
    "the work failed; raise the file-size limit)",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for these error statuses, each with the error body."""
    return {
        status: {"model": ErrorBody, "description": STATUS_MEANING[status]} for status in statuses
    }
