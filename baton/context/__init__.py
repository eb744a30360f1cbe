"""The context engine: conversations, token accounting, strategies, compaction."""

from baton.context.accounting import Calibration, TokenAccount
from baton.context.caching import place_breakpoints
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
from baton.context.prompt_cache import CacheUsage, PrefixCache
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
from baton.context.steps import (
    RedactedThinkingContent,
    Round,
    Step,
    StepLayout,
    TextContent,
    ThinkingContent,
    ToolResultContent,
    ToolUseContent,
)
from baton.context.strategy import (
    DEFAULT_BUDGETS,
    Clock,
    ContextBudget,
    ContextStrategy,
    Summarizer,
    SystemClock,
)
from baton.context.summarize import SummarizeStrategy
from baton.context.summary_format import (
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
from baton.context.tokens import estimate_payload_tokens, estimate_text_tokens
from baton.context.truncation import TruncationSpec, truncate_text
from baton.context.usage import Usage
from baton.context.validation import check_request, validate_request

__all__ = [
    "COMPACT_PROMPT",
    "DEFAULT_BUDGETS",
    "RECORD_TYPES",
    "STRATEGIES",
    "SUMMARY_SCHEMAS",
    "TOKEN_LOG_EVENTS",
    "CacheControl",
    "CacheUsage",
    "Calibration",
    "CarriedSummary",
    "Clock",
    "Compaction",
    "ContentBlock",
    "ContextBudget",
    "ContextCompactedEvent",
    "ContextEvent",
    "ContextStrategy",
    "ContextWarningEvent",
    "Conversation",
    "ConversationRecord",
    "EventSink",
    "ExecuteSummary",
    "ExtractStateStrategy",
    "FactsRegistered",
    "GenericSummary",
    "InitSummary",
    "KeyFact",
    "KeyFactLedger",
    "Message",
    "Payload",
    "PrefixCache",
    "RedactedThinkingContent",
    "Round",
    "RoundStarted",
    "SchedulerSummary",
    "SlidingWindowStrategy",
    "Step",
    "StepAppended",
    "StepLayout",
    "SummarizeStrategy",
    "Summarizer",
    "SummaryBase",
    "SystemClock",
    "TextBlock",
    "TextContent",
    "ThinkingContent",
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
    "dump_record",
    "estimate_payload_tokens",
    "estimate_text_tokens",
    "fallback_summary",
    "make_strategy",
    "parse_record",
    "parse_summary",
    "place_breakpoints",
    "summary_schema_for",
    "truncate_text",
    "validate_request",
]
