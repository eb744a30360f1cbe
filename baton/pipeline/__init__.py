"""The pipeline: Init, Execute and the Scheduler over scenarios — roles and prompts, work
orders, handoff packages and the AgentContext, scenarios and their iteration policy, spend,
and the deployment's configuration."""

from baton.pipeline.config import BatonConfig, load_config, parse_config
from baton.pipeline.messages import (
    Approve,
    Prompt,
    Reject,
    ScenarioQuery,
    ScenarioState,
    StartScenario,
)

__all__ = [
    "Approve",
    "BatonConfig",
    "Prompt",
    "Reject",
    "ScenarioQuery",
    "ScenarioState",
    "StartScenario",
    "load_config",
    "parse_config",
]
