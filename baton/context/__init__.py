"""The context engine: conversations, token accounting, strategies, handoff packages."""

from baton.context.accounting import Calibration, TokenAccount
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
from baton.context.caching import CacheCharge, PromptCacheSimulator, place_breakpoints
from baton.context.conversation import CarriedSummary, Conversation
from baton.context.events import (
    TOKEN_LOG_EVENTS,
    ContextCompactedEvent,
    ContextEvent,
    ContextWarningEvent,
    EventSink,
    ToolResultTruncatedEvent,
)
from baton.context.extract_state import ExtractStateStrategy, WorkingState
from baton.context.fallback import fallback_summary
from baton.context.ledger import KeyFact, KeyFactLedger
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
from baton.context.records import (
    RECORD_TYPES,
    Compaction,
    ConversationRecord,
    FactsRegistered,
    RoundStarted,
    StepAppended,
    dump_record,
    parse_record,
)
from baton.context.registry import STRATEGIES, make_strategy
from baton.context.sliding_window import SlidingWindowStrategy
from baton.context.steps import Round, Step, TextContent, ToolResultContent, ToolUseContent
from baton.context.strategy import (
    SEED_BUDGETS,
    Clock,
    ContextBudget,
    ContextStrategy,
    Summarizer,
    SystemClock,
)
from baton.context.summaries import (
    COMPACT_PROMPT,
    SUMMARY_SCHEMAS,
    ExecuteSummary,
    GenericSummary,
    InitSummary,
    SchedulerSummary,
    SummaryBase,
    parse_summary,
    summary_schema_for,
)
from baton.context.summarize import SummarizeStrategy
from baton.context.tokens import estimate_payload_tokens, estimate_text_tokens
from baton.context.truncation import TruncationSpec, truncate_text
from baton.context.usage import Usage
from baton.context.validation import check_request, validate_request

__all__ = [
    "COMPACT_PROMPT",
    "PACKAGE_VERSION",
    "RECORD_TYPES",
    "SEED_BUDGETS",
    "STRATEGIES",
    "SUMMARY_SCHEMAS",
    "TOKEN_LOG_EVENTS",
    "AgentContext",
    "ArtifactStore",
    "AttributionAnalysis",
    "CacheCharge",
    "CacheControl",
    "Calibration",
    "CarriedSummary",
    "Clock",
    "Compaction",
    "ContentBlock",
    "ContextBudget",
    "ContextCompactedEvent",
    "ContextEvent",
    "ContextPackage",
    "ContextStrategy",
    "ContextWarningEvent",
    "Conversation",
    "ConversationRecord",
    "EvaluationResult",
    "EventSink",
    "ExecuteSummary",
    "ExecuteToInitContext",
    "ExecutionTrace",
    "ExtractStateStrategy",
    "FactsRegistered",
    "FailureSummary",
    "GenericSummary",
    "HandoffPackage",
    "HandoffType",
    "InitSummary",
    "InitToExecuteContext",
    "IterationLayout",
    "KeyFact",
    "KeyFactLedger",
    "Layer1ProblemsReport",
    "Message",
    "Payload",
    "PromptCacheSimulator",
    "Round",
    "RoundStarted",
    "Sample",
    "ScenarioCompletion",
    "SchedulerSummary",
    "SlidingWindowStrategy",
    "Step",
    "StepAppended",
    "SummarizeStrategy",
    "Summarizer",
    "SummaryBase",
    "SystemClock",
    "TextBlock",
    "TextContent",
    "TokenAccount",
    "ToolResultBlock",
    "ToolResultContent",
    "ToolResultTruncatedEvent",
    "ToolSpec",
    "ToolUseBlock",
    "ToolUseContent",
    "TruncationSpec",
    "Usage",
    "WorkingState",
    "check_request",
    "check_version",
    "dump_record",
    "estimate_payload_tokens",
    "estimate_text_tokens",
    "fallback_summary",
    "make_strategy",
    "parse_package",
    "parse_record",
    "parse_summary",
    "place_breakpoints",
    "summary_schema_for",
    "truncate_text",
    "validate_request",
    "write_atomic",
]
