"""The Messages API stand-in's model table: limits, lifecycle, capabilities and tokenizer.

`DEFAULT_MODELS` plays the Models API of November 2026: the 5.5 generation (and Fable 5.1)
current, Opus/Sonnet 5 and Haiku 4.5 active but legacy, Sonnet 4.5 and Opus 4.5 deprecated,
the 4.0 and 4.1 models retired (still listed, refused by `POST /v1/messages`). What a model accepts
comes from `baton.models.rules`, so the stand-in and baton's own checks agree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from baton.context.prompt_cache import CacheUsage
from baton.models.rules import CONTEXT_EDITS, EFFORT_LEVELS, ModelRules, rules_for

ThinkingDisplay = Literal["summarized", "omitted"]
_THINKING_TYPES = ("adaptive", "between_tools", "disabled", "enabled")
_MODEL_INFO_FIELDS = frozenset(
    {"id", "display_name", "created_at", "deprecated_at", "retires_at", "lifecycle", "line"}
    | {"max_input_tokens", "max_tokens", "capabilities"}
)
# Models whose short notes between tool calls come back as thinking blocks by default.
_PROGRESS_AS_THINKING = frozenset({"claude-sonnet-5-5"})
_YES = {"supported": True}


def capabilities_for(rules: ModelRules) -> dict[str, Any]:
    """A complete `ModelCapabilities` object: thinking, effort and the context-management
    edits from `rules`, the rest yes."""
    thinks = bool(rules.thinking_types - {"disabled"})
    return {
        "batch": _YES,
        "citations": _YES,
        "code_execution": _YES,
        "context_management": {
            "supported": bool(rules.context_edits),
            **{name: {"supported": name in rules.context_edits} for name in CONTEXT_EDITS},
        },
        "effort": {
            "supported": bool(rules.effort_levels),
            **{level: {"supported": level in rules.effort_levels} for level in EFFORT_LEVELS},
        },
        "image_input": _YES,
        "pdf_input": _YES,
        "server_tools": {"supported": True, "code_execution": _YES, "web_search": _YES},
        "structured_outputs": _YES,
        "thinking": {
            "supported": thinks,
            "types": {
                name: {"supported": name in rules.thinking_types} for name in _THINKING_TYPES
            },
        },
    }


class StandInModel(BaseModel):
    """One row of the stand-in's Models API: limits, lifecycle and behaviour of a model id.

    Fields left out take the model's values from its id (`baton.models.rules`):
    `line`, `capabilities`, `token_ratio` (tokens per estimated token: 1.3 from the 4.7
    generation on), `thinking_display` (the default when a request names none: `omitted` on
    the models that always think) and `between_tools_as_thinking` (text right before a tool
    call comes back as a thinking block: Sonnet 5.5).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    display_name: str
    max_input_tokens: int = Field(gt=0)
    max_tokens: int = Field(gt=0)
    lifecycle: Literal["active", "deprecated", "retired"] = "active"
    created_at: datetime = datetime(2025, 1, 1, tzinfo=UTC)
    deprecated_at: datetime | None = None
    retires_at: datetime | None = None
    line: str | None = None
    capabilities: dict[str, Any] = Field(default_factory=dict)
    token_ratio: float = Field(1.0, gt=0)
    thinking_display: ThinkingDisplay = "summarized"
    between_tools_as_thinking: bool = False

    @model_validator(mode="before")
    @classmethod
    def _defaults_from_id(cls, data: Any) -> Any:
        if not isinstance(data, Mapping) or not isinstance(data.get("id"), str):
            return data
        rules = rules_for(data["id"])
        defaults = {
            "line": rules.line,
            "capabilities": capabilities_for(rules),
            "token_ratio": rules.tokenizer_ratio,
            "thinking_display": "omitted" if rules.always_thinks else "summarized",
            "between_tools_as_thinking": data["id"] in _PROGRESS_AS_THINKING,
        }
        return {**defaults, **data}

    @property
    def rules(self) -> ModelRules:
        """The request rules of this model, thinking and effort as its capabilities say."""
        return rules_for(self.id).with_capabilities(self.capabilities)

    def info(self) -> dict[str, Any]:
        """The `ModelInfo` object `GET /v1/models/{id}` returns."""
        return {"type": "model", **self.model_dump(mode="json", include=set(_MODEL_INFO_FIELDS))}

    def retired_message(self) -> str:
        """The 404 message of a request naming this (retired) model."""
        since = f" on {self.retires_at.date().isoformat()}" if self.retires_at else ""
        return (
            f"model: {self.id} was retired{since} and no longer serves requests; "
            "choose an active model (GET /v1/models lists them)"
        )

    def tokens(self, estimate: int) -> int:
        """What this model's tokenizer counts for text the estimator puts at `estimate`."""
        return math.ceil(estimate * _ratio(self.token_ratio))

    def cache_usage(self, usage: CacheUsage) -> CacheUsage:
        """`usage` in this model's tokens; the three parts still add up to `tokens(total)`."""
        ratio = _ratio(self.token_ratio)
        total = self.tokens(
            usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens
        )
        # Rounding the cache parts down leaves the remainder to plain input, never negative.
        written = math.floor(usage.cache_creation_input_tokens * ratio)
        read = math.floor(usage.cache_read_input_tokens * ratio)
        return CacheUsage(
            input_tokens=total - written - read,
            cache_creation_input_tokens=written,
            cache_read_input_tokens=read,
            cache_creation_1h_input_tokens=min(
                written, math.floor(usage.cache_creation_1h_input_tokens * ratio)
            ),
        )


def _ratio(value: float) -> Fraction:
    # Through the decimal text: 1.3 is exactly 13/10, so 10 estimated tokens count 13, not 14.
    return Fraction(str(value))


def models_page(models: Sequence[StandInModel], query: Mapping[str, str]) -> dict[str, Any] | str:
    """The `GET /v1/models` page for `query` (newest first), or the 400 message for a bad one."""
    ordered = sorted(models, key=lambda card: (card.created_at, card.id), reverse=True)
    ids = [card.id for card in ordered]
    try:
        limit = int(query.get("limit", "20"))
    except ValueError:
        return "limit: Input should be a valid integer"
    if not 1 <= limit <= 1000:
        return "limit: must be between 1 and 1000"
    for name in ("after_id", "before_id"):
        anchor = query.get(name)
        if anchor is not None and anchor not in ids:
            return f"{name}: no model {anchor!r}"
    first = ids.index(query["after_id"]) + 1 if "after_id" in query else 0
    if "before_id" in query:
        # Paging backwards: the `limit` models right before the anchor.
        stop = ids.index(query["before_id"])
        start = max(first, stop - limit)
        has_more = start > first
    else:
        start, stop = first, first + limit
        has_more = stop < len(ordered)
    page = ordered[start:stop]
    return {
        "data": [card.info() for card in page],
        "has_more": has_more,
        "first_id": page[0].id if page else None,
        "last_id": page[-1].id if page else None,
    }


def _day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _row(model_id: str, name: str, window: int, output: int, **extra: Any) -> StandInModel:
    return StandInModel(
        id=model_id, display_name=name, max_input_tokens=window, max_tokens=output, **extra
    )


def _ending(
    lifecycle: Literal["deprecated", "retired"],
    model_id: str,
    name: str,
    limits: tuple[int, int],
    dates: tuple[str, str, str],
) -> StandInModel:
    """A model on its way out: (window, output) limits; created, deprecated, retiring."""
    window, output = limits
    created, deprecated, retires = map(_day, dates)
    return _row(
        model_id,
        name,
        window,
        output,
        lifecycle=lifecycle,
        created_at=created,
        deprecated_at=deprecated,
        retires_at=retires,
    )


def _retired(model_id: str, name: str, output: int, *dates: str) -> StandInModel:
    created, deprecated, retired = dates
    return _ending("retired", model_id, name, (200_000, output), (created, deprecated, retired))


def _fifth(model_id: str, name: str, created: str) -> StandInModel:
    return _row(model_id, name, 1_000_000, 128_000, created_at=_day(created))


_ROWS = [
    _fifth("claude-opus-5-5", "Claude Opus 5.5", "2026-09-22"),
    _fifth("claude-sonnet-5-5", "Claude Sonnet 5.5", "2026-09-22"),
    _fifth("claude-haiku-5-5", "Claude Haiku 5.5", "2026-10-06"),
    _fifth("claude-fable-5-1", "Claude Fable 5.1", "2026-10-20"),
    _fifth("claude-opus-5", "Claude Opus 5", "2026-04-14"),
    _fifth("claude-sonnet-5", "Claude Sonnet 5", "2026-04-14"),
    # Deprecated with the end of life the SDK's own deprecation table gives (deprecated_at is
    # illustrative). Sonnet 4.5 has a 1M window, as the default budgets give the Execute
    # agent, so that config fits.
    _ending(
        "deprecated",
        "claude-opus-4-5",
        "Claude Opus 4.5",
        (200_000, 64_000),
        ("2025-11-24", "2026-10-22", "2027-01-22"),
    ),
    _row("claude-haiku-4-5", "Claude Haiku 4.5", 200_000, 64_000, created_at=_day("2025-10-15")),
    _ending(
        "deprecated",
        "claude-sonnet-4-5",
        "Claude Sonnet 4.5",
        (1_000_000, 64_000),
        ("2025-09-29", "2026-05-30", "2026-11-30"),
    ),
    # The 4.0 models end on the date the SDK's deprecation table names; the rest is illustrative.
    _retired(
        "claude-opus-4-1", "Claude Opus 4.1", 32_000, "2025-08-05", "2026-05-04", "2026-08-05"
    ),
    _retired("claude-opus-4-0", "Claude Opus 4", 32_000, "2025-05-22", "2026-03-16", "2026-06-15"),
    _retired(
        "claude-sonnet-4-0", "Claude Sonnet 4", 64_000, "2025-05-22", "2026-03-16", "2026-06-15"
    ),
]
DEFAULT_MODELS: dict[str, StandInModel] = {row.id: row for row in _ROWS}
