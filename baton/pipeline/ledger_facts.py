"""What an agent registers in its key-fact ledger (docs/context.md, "Key-fact ledger"): the
paths and ids of the packages it receives and sends, its scenario and dispatch ids, and the
ids its patterns find in user messages and tool results.

The default patterns are the id formats of the handoff and artifact schemas, derived from
the example each id field documents (`sample_id`: "e.g. BS_MT_001" → upper-case words joined
by `_`, ending in digits) and from the Scheduler's dispatch ids (`<conversation>#<n>`); the
`fact_patterns` of an agent's `[actors.<name>]` table add to them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pydantic import BaseModel

from baton.context.ledger import KeyFact, id_facts, path_facts
from baton.pipeline import _artifact_models as artifact_models
from baton.pipeline.messages import Dispatch
from baton.pipeline.packages import PACKAGE_TYPES, ContextPackage

_EXAMPLE = re.compile(r"\be\.g\.\s+([A-Za-z0-9]+(?:_[A-Za-z0-9]+)+)\b")

DISPATCH_ID_PATTERN = r"(?<![\w.@#-])[A-Za-z0-9][A-Za-z0-9_.-]*(?:@\d+)?#\d+(?![\w#])"
"""A Scheduler's dispatch id: the conversation id, `#`, the work order's number."""


def _shape(example: str) -> str:
    """A pattern for ids shaped like `example`: its `_`-separated parts, letters or digits."""
    parts = []
    for part in example.split("_"):
        if part.isdigit():
            parts.append(r"\d+")
        elif part.isupper() or not part.isalpha():
            parts.append(r"[A-Z][A-Z0-9]*")
        else:
            parts.append(r"[A-Za-z][A-Za-z0-9]*")
    return r"(?<![\w-])" + "_".join(parts) + r"(?![\w-])"


def _id_examples(models: Iterable[type[BaseModel]]) -> Iterator[str]:
    for model in models:
        for name, field in model.model_fields.items():
            if name.endswith("_id") and field.description:
                yield from _EXAMPLE.findall(field.description)


def _schema_models() -> list[type[BaseModel]]:
    found = [
        value
        for value in vars(artifact_models).values()
        if isinstance(value, type) and issubclass(value, BaseModel)
    ]
    return [*found, *PACKAGE_TYPES.values()]


def default_fact_patterns() -> list[str]:
    """The id formats of the handoff and artifact schemas, then the dispatch id's."""
    shapes = dict.fromkeys(_shape(example) for example in _id_examples(_schema_models()))
    return [*shapes, DISPATCH_ID_PATTERN]


DEFAULT_FACT_PATTERNS: tuple[str, ...] = tuple(default_fact_patterns())


def _ids_in(data: Any, label: str | None = None) -> Iterator[tuple[str | None, str]]:
    """Every string value of a key ending in `_id` (or a list of them), anywhere in `data`."""
    if isinstance(data, Mapping):
        for key, value in data.items():
            if isinstance(key, str) and key.endswith("_id") and isinstance(value, str):
                yield key, value
            else:
                yield from _ids_in(value, key)
    elif isinstance(data, list):
        for item in data:
            yield from _ids_in(item, label)


def package_facts(package: ContextPackage, *, source: str) -> list[KeyFact]:
    """A package's paths (as its handoff tool checks them) and the ids its fields name."""
    ids = dict.fromkeys(value for _, value in _ids_in(package.model_dump(mode="json")))
    return [*path_facts(package.referenced_paths(), source=source), *id_facts(ids, source=source)]


def dispatch_facts(message: Dispatch) -> list[KeyFact]:
    """A work order's scenario, conversation and dispatch ids, and its package's facts."""
    source = "dispatch"
    facts = [KeyFact(kind="id", value=message.scenario, label="scenario", source=source)]
    if message.conversation_id != message.scenario:
        facts.append(
            KeyFact(kind="id", value=message.conversation_id, label="conversation", source=source)
        )
    if message.dispatch_id is not None:
        facts.append(
            KeyFact(kind="id", value=message.dispatch_id, label="dispatch_id", source=source)
        )
    if message.package is not None:
        facts.extend(package_facts(message.package, source=message.package.handoff_type))
    return facts
