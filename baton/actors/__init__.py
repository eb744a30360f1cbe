"""Actors: the `Actor` base class, `@handler`, `ActorRef`, model clients, journals and tools.

`AnthropicModel` and `RedisJournalStore` are imported on first use: loading the SDK costs
about half a second and redis-py a tenth, which `import baton` should not pay when the offline
model and local journals are all it needs.
"""

import importlib
from typing import TYPE_CHECKING, Any

from baton.actors.actor import Actor, handler
from baton.actors.journal import FileJournalStore, JournalStore, MemoryJournalStore
from baton.actors.messages import (
    Approve,
    Prompt,
    Reject,
    ScenarioQuery,
    ScenarioState,
    StartScenario,
)
from baton.actors.model import (
    CallContext,
    Model,
    ModelLimits,
    ModelResponse,
    TokenCounter,
    bind_call,
    current_call,
)
from baton.actors.ref import ActorRef
from baton.actors.scripted_model import OFFLINE_MODEL_NAME, Script, ScriptedModel, ScriptedResponse

if TYPE_CHECKING:
    from baton.actors.anthropic_model import AnthropicModel, Backoff
    from baton.actors.redis_journal import RedisJournalStore

__all__ = [
    "OFFLINE_MODEL_NAME",
    "Actor",
    "ActorRef",
    "AnthropicModel",
    "Approve",
    "Backoff",
    "CallContext",
    "FileJournalStore",
    "JournalStore",
    "MemoryJournalStore",
    "Model",
    "ModelLimits",
    "ModelResponse",
    "Prompt",
    "RedisJournalStore",
    "Reject",
    "ScenarioQuery",
    "ScenarioState",
    "Script",
    "ScriptedModel",
    "ScriptedResponse",
    "StartScenario",
    "TokenCounter",
    "bind_call",
    "current_call",
    "handler",
]


def __getattr__(name: str) -> Any:
    if name in ("AnthropicModel", "Backoff"):
        return getattr(importlib.import_module("baton.actors.anthropic_model"), name)
    if name == "RedisJournalStore":
        return importlib.import_module("baton.actors.redis_journal").RedisJournalStore
    raise AttributeError(f"module 'baton.actors' has no attribute {name!r}")
