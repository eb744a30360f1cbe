"""Models: the protocol every model client speaks, the Anthropic client (loaded on first
use: the SDK takes half a second to import), the scripted offline model, recording and
replay, the rules of each model line, retry, throttle, prices and the call tally."""

from typing import TYPE_CHECKING

from baton._lazy import lazy_exports
from baton.models.protocol import (
    CallContext,
    Model,
    ModelLimits,
    ModelResponse,
    TokenCounter,
    bind_call,
    current_call,
)
from baton.models.scripted import OFFLINE_MODEL_NAME, Script, ScriptedModel, ScriptedResponse

if TYPE_CHECKING:
    from baton.models.anthropic import AnthropicModel

__all__ = [
    "OFFLINE_MODEL_NAME",
    "AnthropicModel",
    "CallContext",
    "Model",
    "ModelLimits",
    "ModelResponse",
    "Script",
    "ScriptedModel",
    "ScriptedResponse",
    "TokenCounter",
    "bind_call",
    "current_call",
]

__getattr__ = lazy_exports(__name__, {"AnthropicModel": "baton.models.anthropic"})
