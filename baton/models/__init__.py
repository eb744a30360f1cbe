"""Models: the protocol every model client speaks, the Anthropic client, the scripted offline
model, recording and replay, the rules of each model line, retry, throttle, prices and the
call tally.

Every name is imported on first use (the SDK, behind `AnthropicModel`, takes half a second to
import): importing one module of the package, as `baton report` does for the prices, runs
this file first (docs/architecture.md, "What a command imports")."""

from typing import TYPE_CHECKING

from baton._lazy import lazy_exports

if TYPE_CHECKING:
    from baton.models.anthropic import AnthropicModel
    from baton.models.protocol import (
        CallContext,
        Model,
        ModelLimits,
        ModelResponse,
        TokenCounter,
        bind_call,
        current_call,
    )
    from baton.models.scripted import (
        OFFLINE_MODEL_NAME,
        Script,
        ScriptedModel,
        ScriptedResponse,
    )

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

__getattr__ = lazy_exports(
    __name__,
    {
        "AnthropicModel": "baton.models.anthropic",
        "CallContext": "baton.models.protocol",
        "Model": "baton.models.protocol",
        "ModelLimits": "baton.models.protocol",
        "ModelResponse": "baton.models.protocol",
        "TokenCounter": "baton.models.protocol",
        "bind_call": "baton.models.protocol",
        "current_call": "baton.models.protocol",
        "OFFLINE_MODEL_NAME": "baton.models.scripted",
        "Script": "baton.models.scripted",
        "ScriptedModel": "baton.models.scripted",
        "ScriptedResponse": "baton.models.scripted",
    },
)
