"""The context engine: conversations, token accounting, strategies, handoff packages."""

from baton.context.agent_context import AgentContext
from baton.context.artifacts import (
    ArtifactStore,
    AttributionAnalysis,
    EvaluationResult,
    ExecutionTrace,
    FailureSummary,
    IterationLayout,
    Layer1ProblemsReport,
    Sample,
    write_atomic,
)
from baton.context.packages import (
    PACKAGE_VERSION,
    ContextPackage,
    ExecuteToInitContext,
    HandoffPackage,
    HandoffType,
    InitToExecuteContext,
    ScenarioCompletion,
    check_version,
    parse_package,
)
from baton.context.payload import (
    CacheControl,
    ContentBlock,
    Message,
    Payload,
    TextBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)
from baton.context.tokens import estimate_payload_tokens, estimate_text_tokens
from baton.context.usage import Usage
from baton.context.validation import check_request, validate_request

__all__ = [
    "PACKAGE_VERSION",
    "AgentContext",
    "ArtifactStore",
    "AttributionAnalysis",
    "CacheControl",
    "ContentBlock",
    "ContextPackage",
    "EvaluationResult",
    "ExecuteToInitContext",
    "ExecutionTrace",
    "FailureSummary",
    "HandoffPackage",
    "HandoffType",
    "InitToExecuteContext",
    "IterationLayout",
    "Layer1ProblemsReport",
    "Message",
    "Payload",
    "Sample",
    "ScenarioCompletion",
    "TextBlock",
    "ToolResultBlock",
    "ToolSpec",
    "ToolUseBlock",
    "Usage",
    "check_request",
    "check_version",
    "estimate_payload_tokens",
    "estimate_text_tokens",
    "parse_package",
    "validate_request",
    "write_atomic",
]
