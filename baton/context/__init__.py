"""The context engine: conversations as rounds and steps, token accounting, the strategies
that compose each request and compact the history, and what a strategy author needs; every
other name is importable from its module (docs/context.md)."""

from baton.context._strategy_base import StrategyBase
from baton.context.accounting import TokenAccount
from baton.context.conversation import Conversation
from baton.context.events import ContextCompactedEvent, ContextEvent, EventSink
from baton.context.extract_state import ExtractStateStrategy
from baton.context.ledger import KeyFact, KeyFactLedger
from baton.context.payload import Payload, ToolSpec
from baton.context.records import Compaction
from baton.context.registry import STRATEGIES, make_strategy
from baton.context.sliding_window import SlidingWindowStrategy
from baton.context.steps import Round, Step
from baton.context.strategy import Clock, ContextBudget, ContextStrategy
from baton.context.summarize import SummarizeStrategy
from baton.context.summary_format import (
    COMPACT_PROMPT,
    GenericSummary,
    SummaryBase,
    parse_summary,
)
from baton.context.tokens import estimate_payload_tokens, estimate_text_tokens
from baton.context.usage import Usage
from baton.context.validation import validate_request

__all__ = [
    "COMPACT_PROMPT",
    "STRATEGIES",
    "Clock",
    "Compaction",
    "ContextBudget",
    "ContextCompactedEvent",
    "ContextEvent",
    "ContextStrategy",
    "Conversation",
    "EventSink",
    "ExtractStateStrategy",
    "GenericSummary",
    "KeyFact",
    "KeyFactLedger",
    "Payload",
    "Round",
    "SlidingWindowStrategy",
    "Step",
    "StrategyBase",
    "SummarizeStrategy",
    "SummaryBase",
    "TokenAccount",
    "ToolSpec",
    "Usage",
    "estimate_payload_tokens",
    "estimate_text_tokens",
    "make_strategy",
    "parse_summary",
    "validate_request",
]
