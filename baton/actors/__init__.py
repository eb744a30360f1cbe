"""The agents: the agent loop, the Init / Execute roles, the Scheduler, tools, model clients
(`AnthropicModel` and `RedisJournalStore` load their libraries on first use), journals,
scenarios, the pipeline and its configuration."""

from typing import TYPE_CHECKING

from baton._lazy import lazy_exports
from baton.actors.agent_config import DEFAULT_AGENTS, AgentConfig
from baton.actors.config import BatonConfig, load_config, parse_config
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
from baton.actors.scripted_model import OFFLINE_MODEL_NAME, Script, ScriptedModel, ScriptedResponse
from baton.runtime.backoff import Backoff

if TYPE_CHECKING:
    from baton.actors.anthropic_model import AnthropicModel
    from baton.actors.redis_journal import RedisJournalStore

__all__ = [
    "DEFAULT_AGENTS",
    "OFFLINE_MODEL_NAME",
    "AgentConfig",
    "AnthropicModel",
    "Approve",
    "Backoff",
    "BatonConfig",
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
    "load_config",
    "parse_config",
]


__getattr__ = lazy_exports(
    __name__,
    {
        "AnthropicModel": "baton.actors.anthropic_model",
        "RedisJournalStore": "baton.actors.redis_journal",
    },
)
