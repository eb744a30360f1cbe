"""The control API's OpenAPI document, as the running process really answers.

FastAPI describes the fixed routes. `POST /actors/{name}/tell|ask` takes a message whose
`type` names one of the classes the actor handles, so a single templated path could only say
"any string" and a client built from it would send types the actor refuses. Instead the
document lists, for every actor spawned in this process, `/actors/<actor>/tell` and
`/actors/<actor>/ask` with a body that is a `oneOf` over that actor's message types,
discriminated by `type`, each with its `payload` schema generated from the handler's pydantic
model (docs/architecture.md, "A message, from `baton tell` to a handler and back"). It is
built when asked for, so actors spawned after the app (`baton run --actor`) are in it.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

from fastapi import Body, FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, create_model
from starlette.routing import BaseRoute

from baton.pipeline.records import MemoryRecalled  # noqa: F401 - every layer's records registered
from baton.runtime.actor import Actor
from baton.runtime.runtime import Runtime
from baton.runtime.token_records import token_record_adapter
from baton.server._control_models import AskReply, MessageRequest, Told
from baton.server._error_docs import error_responses
from baton.server._token_stream import NDJSON

# What any request can be answered, whatever its route: too slow (408), too big (413), not
# JSON (415), invalid (422), a bug (500).
ANY_ROUTE = (408, 413, 415, 422, 500)
# What the documented tell and ask can answer besides (507: the disk is full).
TELL_ERRORS = (404, 409, 503, 507)
ASK_ERRORS = (400, 404, 409, 502, 504, 507)

_REF = "#/components/schemas/{model}"


def message_types(actor_type: type[Actor]) -> list[type[BaseModel]]:
    """The message classes `actor_type` handles that can arrive as JSON, by name."""
    found = actor_type.actor_message_types()
    return [
        found[name]
        for name in sorted(found)
        if isinstance(found[name], type) and issubclass(found[name], BaseModel)
    ]


def require_tags(document: dict[str, Any]) -> None:
    """Make the tag of every discriminated union a required property of each branch: pydantic
    refuses a branch without its tag, although a tag with a default (a handoff package's
    `handoff_type`, a token record's `event`) is optional in the schema it generates."""
    components = document.get("components", {}).get("schemas", {})

    def visit(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                visit(item)
            return
        if not isinstance(node, dict):
            return
        discriminator = node.get("discriminator")
        tag = discriminator.get("propertyName") if isinstance(discriminator, dict) else None
        for branch in (node.get("oneOf") or []) if tag else []:
            ref = branch.get("$ref", "") if isinstance(branch, dict) else ""
            target = components.get(ref.rsplit("/", 1)[-1]) if ref else branch
            if isinstance(target, dict) and tag in target.get("properties", {}):
                required = target.setdefault("required", [])
                if tag not in required:
                    required.append(tag)
        for value in node.values():
            visit(value)

    visit(document)


@functools.cache
def _envelope(message_type: type[BaseModel]) -> type[BaseModel]:
    """The request body that carries one `message_type`: `{"type", "payload", "timeout"?}`."""
    name = message_type.__name__
    required = any(field.is_required() for field in message_type.model_fields.values())
    description = f"the {name}'s fields"
    payload = (
        Field(description=description)
        if required
        else Field(default_factory=dict, description=f"{description} (none is required)")
    )
    summary = (message_type.__doc__ or "").strip().split("\n\n")[0]
    # The discriminator's value, known only now: a `Literal` built at run time.
    kind: Any = Literal.__getitem__(name)
    envelope: type[BaseModel] = create_model(
        f"{name}Message",
        __config__=ConfigDict(extra="forbid"),
        __doc__=f"A `{name}` message. {summary}".strip(),
        __module__=message_type.__module__,
        type=(kind, Field(description="the message class name")),
        payload=(message_type, payload),
        timeout=(float | None, MessageRequest.model_fields["timeout"]),
    )
    return envelope


def _body_type(types: Sequence[type[BaseModel]]) -> Any:
    envelopes = [_envelope(message_type) for message_type in types]
    if len(envelopes) == 1:
        return envelopes[0]
    return Annotated[functools.reduce(operator.or_, envelopes), Field(discriminator="type")]


def _described(body: Any, returns: type[BaseModel]) -> Callable[..., Any]:
    """An endpoint that is only described, never routed to: the generic route serves it."""

    async def endpoint(message: Any) -> Any:
        # Never routed to (FastAPI only reads its signature for the schema).
        raise RuntimeError("documentation only: /actors/{name}/tell|ask serve it")

    endpoint.__annotations__ = {"message": Annotated[body, Body()], "return": returns}
    return endpoint


def actor_routes(
    actors: dict[str, type[Actor]], undocumented: frozenset[type[BaseModel]] = frozenset()
) -> list[APIRoute]:
    """One documented tell and ask per actor that takes at least one JSON message type, but
    for the types in `undocumented` (which it still takes)."""
    routes: list[APIRoute] = []
    for name, actor_type in sorted(actors.items()):
        every = message_types(actor_type)
        types = [t for t in every if t not in undocumented]
        if not types:
            continue
        body = _body_type(types)
        accepted = ", ".join(f"`{t.__name__}`" for t in types)
        hidden = [t.__name__ for t in every if t in undocumented]
        if hidden:
            accepted += (
                f" (it also takes {', '.join(hidden)}: messages between the pipeline's actors, "
                "not an API, so not described here)"
            )
        routes.append(
            APIRoute(
                f"/actors/{name}/tell",
                _described(body, Told),
                methods=["POST"],
                name=f"tell_{name}",
                operation_id=f"tell_{name}",
                summary=f"Queue a message for {name}",
                description=(
                    f"Queue a message for `{name}` ({actor_type.__name__}), which accepts "
                    f"{accepted}; waits up to `timeout` for room in its mailbox (503 after)."
                ),
                status_code=202,
                response_model=Told,
                responses=error_responses(*ANY_ROUTE, *TELL_ERRORS),
                tags=["actors"],
            )
        )
        routes.append(
            APIRoute(
                f"/actors/{name}/ask",
                _described(body, AskReply),
                methods=["POST"],
                name=f"ask_{name}",
                operation_id=f"ask_{name}",
                summary=f"Ask {name} and wait for the reply",
                description=(
                    f"Send a message to `{name}` ({actor_type.__name__}), which accepts "
                    f"{accepted}, and wait up to `timeout` for its reply (504 after)."
                ),
                response_model=AskReply,
                responses=error_responses(*ANY_ROUTE, *ASK_ERRORS),
                tags=["actors"],
            )
        )
    return routes


def _token_stream(document: dict[str, Any]) -> None:
    """Say what `GET /tokens` sends: NDJSON, one token-log record per line; with
    `follow=true` a stream that ends only when the client disconnects or the server stops."""
    operation = document["paths"]["/tokens"]["get"]
    # Named under `TokenRecord.`, so no message class of the same name can shadow a record.
    item = token_record_adapter().json_schema(
        mode="serialization", by_alias=True, ref_template=_REF.format(model="TokenRecord.{model}")
    )
    components = document.setdefault("components", {}).setdefault("schemas", {})
    components.update({f"TokenRecord.{name}": schema for name, schema in item.pop("$defs").items()})
    components["TokenRecord"] = item
    operation["responses"]["200"] = {
        "description": (
            "Token-log records, one JSON object per line (NDJSON). Without `follow` the "
            "current log file, and the response ends; with `follow=true` a stream of the "
            "records emitted from then on that never ends by itself: read it line by line "
            "until you disconnect."
        ),
        "content": {NDJSON: {"itemSchema": {"$ref": _REF.format(model="TokenRecord")}}},
    }


def control_openapi(
    app: FastAPI, runtime: Runtime, *, undocumented: frozenset[type[BaseModel]] = frozenset()
) -> Callable[[], dict[str, Any]]:
    """`app.openapi`: the document for the actors `runtime` runs now (kept while they stay),
    leaving out the message types in `undocumented`."""
    built: dict[tuple[tuple[str, type[Actor]], ...], dict[str, Any]] = {}

    def openapi() -> dict[str, Any]:
        actors = runtime.actor_types()
        key = tuple(sorted(actors.items(), key=operator.itemgetter(0)))
        document = built.get(key)
        if document is None:
            routes: list[BaseRoute] = [*app.routes, *actor_routes(actors, undocumented)]
            document = get_openapi(
                title=app.title,
                version=app.version,
                openapi_version=app.openapi_version,
                description=app.description,
                routes=routes,
                tags=app.openapi_tags,
            )
            _token_stream(document)
            require_tags(document)
            built.clear()
            built[key] = document
        return document

    return openapi
