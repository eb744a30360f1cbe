"""An error body is read with the standard library exactly as strictly as the model the
server writes it with (`ErrorBody`) validates it."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from baton.runtime._error_body import ErrorFields, error_fields
from baton.runtime._error_wire import ErrorBody

BODIES: list[Any] = [
    {"error": {"type": "UnknownActorError", "message": "no actor", "details": {"actor": "a"}}},
    {"error": {"type": "X", "message": ""}},
    {"error": {"type": "X", "message": "m", "details": {}}},
    {"error": {"type": "X", "message": "m", "details": None}},
    {"error": {"type": "X", "message": "m", "details": []}},
    {"error": {"type": "X", "message": "m", "extra": 1}},
    {"error": {"type": "X"}},
    {"error": {"message": "m"}},
    {"error": {"type": 1, "message": "m"}},
    {"error": {"type": "X", "message": ["m"]}},
    {"error": {"type": None, "message": "m"}},
    {"error": "boom"},
    {"error": None},
    {"error": {"type": "X", "message": "m"}, "more": 1},
    {},
    [],
    "Not Found",
    None,
    42,
]


def _validated(body: Any) -> ErrorFields | None:
    try:
        detail = ErrorBody.model_validate(body).error
    except ValidationError:
        return None
    return ErrorFields(detail.type, detail.message, detail.details)


@pytest.mark.parametrize("body", BODIES, ids=[repr(body)[:60] for body in BODIES])
def test_an_error_body_is_read_as_the_model_validates_it(body: Any) -> None:
    """The same fields, or None exactly when the model refuses the body."""
    assert _validated(body) == error_fields(body)
